//! Splits a command line into words, as a small POSIX-like shell would: blanks separate words,
//! `'…'` is literal, `"…"` is literal except `\"`, `\\`, `\$` and `` \` ``, a backslash outside
//! quotes takes the next character literally. Pipes, lists and redirections are refused rather
//! than silently passed on as words: the shell runs one builtin.

use alloc::string::String;
use alloc::vec::Vec;

/// Most words one command may have.
pub const WORDS_MAX: usize = 256;

/// Why a line could not be split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WordsError {
    /// A quote was opened and never closed.
    UnclosedQuote(char),
    /// An unquoted shell operator (`|`, `;`, `&`, `<`, `>`) that this shell does not run.
    Operator(char),
    /// More than [`WORDS_MAX`] words.
    TooMany,
}

impl core::fmt::Display for WordsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WordsError::UnclosedQuote(q) => write!(f, "unclosed {q} quote"),
            WordsError::Operator(c) => write!(
                f,
                "`{c}` is not supported: shell.exec runs one builtin per call (quote it to pass it as text)"
            ),
            WordsError::TooMany => write!(f, "more than {WORDS_MAX} words"),
        }
    }
}

/// The words of `line`; an empty or blank line has none.
pub fn split(line: &str) -> Result<Vec<String>, WordsError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether a word has started (`''` is an empty word, not nothing).
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    if words.len() == WORDS_MAX {
                        return Err(WordsError::TooMany);
                    }
                    words.push(core::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(WordsError::UnclosedQuote('\'')),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(WordsError::UnclosedQuote('"')),
                        },
                        Some(c) => word.push(c),
                        None => return Err(WordsError::UnclosedQuote('"')),
                    }
                }
            }
            '\\' => {
                in_word = true;
                // A trailing backslash stands for itself.
                word.push(chars.next().unwrap_or('\\'));
            }
            '|' | ';' | '&' | '<' | '>' => return Err(WordsError::Operator(c)),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        if words.len() == WORDS_MAX {
            return Err(WordsError::TooMany);
        }
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn ok(line: &str) -> Vec<String> {
        split(line).unwrap()
    }

    #[test]
    fn blanks_separate_words() {
        assert_eq!(ok("  echo   a\tb \n"), vec!["echo", "a", "b"]);
        assert!(ok("").is_empty());
        assert!(ok(" \t ").is_empty());
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(ok(r#"echo 'a  b' "c d""#), vec!["echo", "a  b", "c d"]);
        assert_eq!(ok(r#"echo 'it''s' x"y"z"#), vec!["echo", "its", "xyz"]);
        assert_eq!(
            ok(r#"echo "say \"hi\" \\ \n""#),
            vec!["echo", r#"say "hi" \ \n"#]
        );
        assert_eq!(ok(r"echo a\ b \| \'"), vec!["echo", "a b", "|", "'"]);
        assert_eq!(ok("echo '' \"\""), vec!["echo", "", ""]);
        assert_eq!(ok("echo 'a|b;c'"), vec!["echo", "a|b;c"]);
        assert_eq!(ok("echo x\\"), vec!["echo", "x\\"]);
        assert_eq!(ok("cat /ütf8/файл"), vec!["cat", "/ütf8/файл"]);
    }

    #[test]
    fn errors() {
        assert_eq!(split("echo 'abc"), Err(WordsError::UnclosedQuote('\'')));
        assert_eq!(split("echo \"abc"), Err(WordsError::UnclosedQuote('"')));
        assert_eq!(split("echo \"abc\\"), Err(WordsError::UnclosedQuote('"')));
        assert_eq!(split("ls | cat"), Err(WordsError::Operator('|')));
        assert_eq!(split("echo a; reboot"), Err(WordsError::Operator(';')));
        assert_eq!(split("echo a>b"), Err(WordsError::Operator('>')));
        let many = "x ".repeat(WORDS_MAX);
        assert_eq!(split(&many).unwrap().len(), WORDS_MAX);
        let too_many = "x ".repeat(WORDS_MAX + 1);
        assert_eq!(split(&too_many), Err(WordsError::TooMany));
        assert_eq!(split(too_many.trim_end()), Err(WordsError::TooMany));
    }
}
