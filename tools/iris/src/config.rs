//! The boot configuration (`boot/config.conf`) and the NVRAM environment the kernel serves to
//! the module through `env_get`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Keys the boot configuration must provide (after the environment's overrides).
pub const KEY_URL: &str = "mcp.url";
pub const KEY_SHA256: &str = "mcp.sha256";
/// Optional: the SHA-256 (hex) of an `https://` image server's certificate, trusted instead of
/// the web's roots (a lab server with a self-signed certificate).
pub const KEY_TLS_PIN: &str = "mcp.tls_pin";

/// Environment defaults of the rig's NVRAM: an SGI Ethernet address (OUI 08:00:69) and an IPv4
/// address for the emulated network. `--env` overrides them.
pub const DEFAULT_ENV: &[(&str, &str)] =
    &[("eaddr", "08:00:69:0e:07:01"), ("netaddr", "172.31.77.2")];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// What the kernel boots: where the image is and the digest it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootConfig {
    pub url: String,
    /// Lower-case hex SHA-256.
    pub sha256: String,
    /// Lower-case hex SHA-256 of the HTTPS server's certificate, when pinned.
    pub tls_pin: Option<String>,
}

/// Parse `key = value` lines; `#` starts a comment line; blank lines are skipped. `origin` names
/// the file in errors.
pub fn parse_kv(text: &str, origin: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut map = BTreeMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(ConfigError(format!(
                "{origin}:{}: malformed line (expected `key = value`): {line}",
                n + 1
            )));
        };
        let key = key.trim();
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(ConfigError(format!(
                "{origin}:{}: malformed key in: {line}",
                n + 1
            )));
        }
        map.insert(key.to_string(), value.trim().to_string());
    }
    Ok(map)
}

/// Read the boot configuration file and apply the environment's overrides of `mcp.url` and
/// `mcp.sha256`.
pub fn load_boot_config(path: &Path, env: &Env) -> Result<BootConfig, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("cannot read boot config {}: {e}", path.display())))?;
    boot_config_from(&text, &path.display().to_string(), env)
}

pub fn boot_config_from(text: &str, origin: &str, env: &Env) -> Result<BootConfig, ConfigError> {
    let map = parse_kv(text, origin)?;
    let get = |key: &str| -> Result<String, ConfigError> {
        env.get(key)
            .or_else(|| map.get(key).map(String::as_str))
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .ok_or_else(|| ConfigError(format!("{origin}: missing `{key} = …` line")))
    };
    let url = get(KEY_URL)?;
    let sha256 = get(KEY_SHA256)?.to_ascii_lowercase();
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ConfigError(format!(
            "{origin}: malformed {KEY_SHA256} (want 64 hex digits): {sha256}"
        )));
    }
    let tls_pin = match get(KEY_TLS_PIN) {
        Ok(pin) => {
            let pin = pin.to_ascii_lowercase();
            if pin.len() != 64 || !pin.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(ConfigError(format!(
                    "{origin}: malformed {KEY_TLS_PIN} (want 64 hex digits): {pin}"
                )));
            }
            Some(pin)
        }
        Err(_) => None,
    };
    Ok(BootConfig {
        url,
        sha256,
        tls_pin,
    })
}

/// The NVRAM environment: `name=value` variables, later settings override earlier ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// The rig's defaults (`DEFAULT_ENV`).
    pub fn with_defaults() -> Env {
        let mut env = Env::default();
        for (k, v) in DEFAULT_ENV {
            env.set(k, v);
        }
        env
    }

    pub fn set(&mut self, key: &str, value: &str) {
        self.vars.insert(key.to_string(), value.to_string());
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Apply one `KEY=VALUE` setting as given on the command line.
    pub fn apply_setting(&mut self, setting: &str) -> Result<(), ConfigError> {
        let (k, v) = parse_setting(setting)?;
        self.set(&k, &v);
        Ok(())
    }

    /// Apply an environment file: `KEY=VALUE` lines, `#` comments.
    pub fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read env file {}: {e}", path.display())))?;
        for (k, v) in parse_kv(&text, &path.display().to_string())? {
            self.set(&k, &v);
        }
        Ok(())
    }
}

/// Split `KEY=VALUE` (as `--env` takes it).
pub fn parse_setting(setting: &str) -> Result<(String, String), ConfigError> {
    match setting.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(ConfigError(format!(
            "malformed environment setting (want KEY=VALUE): {setting}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    #[test]
    fn parses_config_with_comments() {
        let text = format!(
            "# boot\n\nmcp.url = file:x.o\nmcp.sha256 = {}\n",
            SHA.to_uppercase()
        );
        let c = boot_config_from(&text, "c", &Env::default()).unwrap();
        assert_eq!(
            c,
            BootConfig {
                url: "file:x.o".into(),
                sha256: SHA.into(),
                tls_pin: None,
            }
        );
    }

    #[test]
    fn missing_and_malformed_lines() {
        let e = boot_config_from("mcp.url = a\n", "c", &Env::default()).unwrap_err();
        assert_eq!(e.0, "c: missing `mcp.sha256 = …` line");
        let e = boot_config_from("mcp.url = a\nthis is wrong\n", "c", &Env::default()).unwrap_err();
        assert_eq!(
            e.0,
            "c:2: malformed line (expected `key = value`): this is wrong"
        );
        let e =
            boot_config_from("mcp.url = a\nmcp.sha256 = 12\n", "c", &Env::default()).unwrap_err();
        assert!(e.0.contains("malformed mcp.sha256"), "{e}");
    }

    #[test]
    fn a_tls_pin_is_64_hex_digits() {
        let text = format!("mcp.url = https://lab/x.o\nmcp.sha256 = {SHA}\n");
        let mut env = Env::default();
        env.apply_setting(&format!("mcp.tls_pin={}", SHA.to_uppercase()))
            .unwrap();
        let c = boot_config_from(&text, "c", &env).unwrap();
        assert_eq!(c.tls_pin.as_deref(), Some(SHA));
        env.apply_setting("mcp.tls_pin=abc").unwrap();
        let e = boot_config_from(&text, "c", &env).unwrap_err();
        assert!(e.0.contains("malformed mcp.tls_pin"), "{e}");
    }

    #[test]
    fn env_overrides_config() {
        let mut env = Env::default();
        env.apply_setting("mcp.url=file:other.o").unwrap();
        let text = format!("mcp.url = file:x.o\nmcp.sha256 = {SHA}\n");
        assert_eq!(
            boot_config_from(&text, "c", &env).unwrap().url,
            "file:other.o"
        );
        assert!(env.apply_setting("novalue").is_err());
        env.apply_setting("k=a=b").unwrap();
        assert_eq!(env.get("k"), Some("a=b"));
    }
}
