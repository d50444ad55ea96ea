//! The module's entry points, called by the kernel: `init` once with the ABI table, `poll`
//! from the kernel's scheduler loop, `exit` before the kernel unloads the module or resets.
//! This is the only place that knows every layer: it builds the driver, the network stack, the
//! MCP server and the tool context, and drives them from `poll`.

use crate::board::console::kprintln;
use crate::board::disk::KernelDisk;
use crate::board::entropy as sources;
use crate::board::flight::FlightLog;
use crate::board::kernel::{Kernel, KernelRawBus};
use crate::board::newport_bus::Kseg1Rex3;
use crate::board::seeq_bus::Kseg1Bus;
use crate::drivers::seeq::{self, Seeq};
use crate::hil::framebuffer::Framebuffer;
use crate::net::access::{self, TokenChoice};
use crate::net::budget::{PoolGauge, ServerBudgets};
use crate::net::mdns::Responder;
use crate::net::router::Router;
use crate::net::server::{HttpServer, ServerConfig};
use crate::net::settings::Settings;
use crate::net::stack::NetStack;
use crate::net::tcp_wire::TcpWire;
use crate::services::audit::AuditLog;
use crate::services::boot::BootReport;
use crate::services::context::Services;
use crate::services::debug::debugger::Debugger;
use crate::services::entropy::Entropy;
use crate::services::events::Events;
use crate::services::fs::{Disk, mount};
use crate::services::identity::{BUILD_ID, Identity, VERSION};
use crate::services::memory::MemoryPlan;
use crate::services::power::Action;
use crate::services::screen::capture::png_pool;
use crate::services::serial_ring::Span;
use crate::services::serial_wait::Waiters;
use crate::services::shell::output as shell_output;
use crate::services::status::{HeapUsage, NetUsage, mac_text};
use crate::tools::devices::raw_access::RawAccess;
use crate::tools::{self, Ctx};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use core::cell::RefCell;
use indy::abi::{ABI_MIN_VERSION, ABI_TABLE_MIN_SIZE, AbiTable, status};
use smoltcp::wire::Ipv4Cidr;
use spin::Mutex;

/// The smallest heap the module agrees to start with.
const HEAP_MIN: usize = 1 << 20;
/// A token compiled in by `cargo xtask image --token-file` (the environment's wins).
const BUILD_TOKEN: Option<&str> = option_env!("IRIX7_MCP_BUILD_TOKEN");

type Nic = TcpWire<Seeq<Kseg1Bus<Kernel>>>;

/// Everything the module owns while loaded.
struct Module {
    kernel: Kernel,
    stack: NetStack<Nic>,
    server: HttpServer,
    router: Router,
    ctx: Rc<RefCell<Ctx>>,
    port: u16,
    /// The DRBG, shared with the MCP server's session ids; polls that move frames stir it.
    entropy: Rc<RefCell<Entropy>>,
    /// mDNS/DNS-SD (`_mcp._tcp`); None if the stack refused its socket.
    mdns: Option<Responder>,
    /// The flight recorder (also the MCP server's call observer).
    flight: Rc<FlightLog>,
}

// SAFETY: the kernel calls the module from one thread only; the Rc/RefCell inside never cross
// threads. The Mutex exists to make the static sound, not for concurrency.
unsafe impl Send for Module {}

impl Module {
    /// One non-blocking step. Returns > 0 when work is pending, 0 when idle.
    fn poll(&mut self, now_ms: u64) -> i32 {
        self.kernel.watchdog_kick();
        // A long gap since the last kick is an event (a near miss of the watchdog).
        if let Ok(mut ctx) = self.ctx.try_borrow_mut() {
            ctx.services_mut().polled(now_ms);
        }
        let server = &mut self.server;
        // Frames in only: what the sockets have to send goes out once, at the end of the poll,
        // with the answers the server writes in between.
        // The next listener goes up between frames, after a SYN (which may have taken the last).
        let mut work = self.stack.ingress(now_ms, |s, nic| {
            if nic.took_syn() {
                server.refill(s, now_ms);
                nic.set_handshakes(server.handshakes(s));
            }
        });
        if work {
            // When frames arrive is up to the network, and Count tells it to the cycle.
            self.entropy
                .borrow_mut()
                .stir(sources::event_sample(now_ms));
        }
        let ip = self.stack.ipv4();
        self.refresh_net_usage(ip, now_ms);
        work |= self
            .server
            .poll(&mut self.stack.sockets, &mut self.router, now_ms);
        // Handshakes the poll saw end (or reaped) no longer hold their SYNs back. A new one
        // comes only with a SYN, which the ingress above wrote in already.
        if self.stack.device.holds_handshakes() {
            self.stack
                .device
                .set_handshakes(self.server.handshakes(&self.stack.sockets));
        }
        // Tool calls running as tasks advance with no request open.
        work |= self.router.mcp.poll_tasks(now_ms);
        // Failed logins are summarised when their window closes, requests or not.
        self.router.mcp.poll_audit(now_ms);
        if let Some(m) = &mut self.mdns {
            work |= m.poll(&mut self.stack.sockets, ip, now_ms);
        }
        // Frames that came in since the ingress above wait for the next poll: the kernel
        // polls again at once when this one did work.
        work |= self.stack.egress(now_ms);
        // A reset or power-off answered by a tool happens only after its answer has left;
        // until then the kernel should keep polling.
        let mut ctx = self.ctx.borrow_mut();
        let services = ctx.services_mut();
        let net = services.net;
        self.flight.poll(now_ms, net.open_connections, net.requests);
        // A reset about to happen is said in the flight record first, with who asked.
        if let Some(p) = services.pending
            && p.action == Action::Reset
            && now_ms >= p.at_ms
        {
            self.flight.reset_requested(p.by, now_ms);
        }
        services.run_due(now_ms);
        work |= services.pending.is_some();
        i32::from(work)
    }

    fn refresh_net_usage(&mut self, ip: Option<Ipv4Cidr>, now_ms: u64) {
        // DHCP may give or change the address after boot: Origins and Hosts naming it pass.
        self.router.mcp.set_own_ip(ip.map(|c| c.address().octets()));
        let mut ctx = self.ctx.borrow_mut();
        let net = NetUsage {
            ip: ip.map(|c| c.address().octets()),
            prefix_len: ip.map_or(0, |c| c.prefix_len()),
            mac: self.stack.device.inner().mac(),
            port: self.port,
            open_connections: self.server.open_connections(&self.stack.sockets),
            requests: self.router.requests,
            rings: self.stack.device.inner().ring_positions(),
        };
        ctx.services_mut().set_net(net, now_ms);
    }
}

static MODULE: Mutex<Option<Module>> = Mutex::new(None);

fn heap_usage() -> HeapUsage {
    let u = crate::board::heap::usage();
    HeapUsage {
        used: u.used,
        peak: u.peak,
        size: u.size,
    }
}

/// Checks the table, takes the heap, prints the banner, starts the network. Returns 0 or a
/// negative status.
///
/// # Safety
/// `table` points to the kernel's ABI table, valid until `irix7_mcp_exit` returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn irix7_mcp_init(table: *const AbiTable) -> i32 {
    if table.is_null() {
        return status::E_INVAL;
    }
    // SAFETY: the kernel passes a valid table (contract above). Read the header first: an older
    // kernel's table may be shorter than ours.
    let (version, size) = unsafe { ((*table).version, (*table).size) };
    if version < ABI_MIN_VERSION {
        return status::E_ABI_VERSION;
    }
    if size < ABI_TABLE_MIN_SIZE {
        return status::E_ABI_SIZE;
    }
    // SAFETY: version and size say every ABI 10 entry is there (newer ones are checked against
    // `size` before each call), and the table lives until exit.
    let kernel = unsafe { Kernel::new(&*table) };
    crate::board::panic::set_kernel(kernel);

    let mut module = MODULE.lock();
    if module.is_some() {
        kprintln!(kernel, "init called twice; refused");
        return status::E_INVAL;
    }
    let (heap_base, heap_size) = kernel.heap_region();
    if heap_base.is_null() || heap_size < HEAP_MIN {
        kprintln!(
            kernel,
            "heap of {heap_size} bytes is too small (need {HEAP_MIN})"
        );
        return status::E_NOMEM;
    }
    // SAFETY: the region is the module's until exit, and nothing was allocated before.
    unsafe { crate::board::heap::init(heap_base, heap_size) };

    let identity = Identity {
        image: kernel.image_info(),
    };
    // Read before anything is written to this boot's flight region.
    let boot = crate::board::boot::read(kernel, &identity);
    {
        use core::fmt::Write as _;
        let mut c = crate::board::console::Console(kernel);
        let _ = writeln!(c, "irix7-mcp {VERSION}, ABI {version}, {}", identity.line());
        if let Some(line) = identity.refused_line() {
            let _ = writeln!(c, "{line}");
        }
        let _ = writeln!(c, "boot: {}", boot.line());
    }
    match start(kernel, version, identity, boot) {
        Ok(m) => {
            *module = Some(m);
            status::OK
        }
        Err(code) => code,
    }
}

/// Brings up the NIC, the network stack and the MCP server from the environment.
fn start(
    kernel: Kernel,
    abi_version: u32,
    identity: Identity,
    boot: BootReport,
) -> Result<Module, i32> {
    let now = kernel.clock_ms();
    let flight = Rc::new(FlightLog::new(
        kernel,
        BUILD_ID,
        || {
            let u = crate::board::heap::usage();
            (u.used, u.size)
        },
        now,
    ));

    let settings = Settings::from_env(|key| kernel.env(key), BUILD_TOKEN);
    for note in &settings.notes {
        kprintln!(kernel, "{note}");
    }
    let (mac, port) = (settings.mac, settings.port);

    let nic_config = seeq::Config::default();
    // SAFETY: the Indy's HPC3 is at its fixed address, and the module drives its Ethernet
    // channel alone (the kernel hands the NIC over at load).
    let bus = unsafe { Kseg1Bus::new(kernel, Seeq::<Kseg1Bus<Kernel>>::dma_len(&nic_config)) }
        .map_err(|e| {
            kprintln!(kernel, "no DMA area for the NIC: {e:?}");
            status::E_NOMEM
        })?;
    let nic = Seeq::new(bus, mac, nic_config).map_err(|e| {
        kprintln!(kernel, "NIC init failed: {e:?}");
        status::E_NODEV
    })?;
    kprintln!(kernel, "{:?} at {}", nic.chip(), mac_text(mac));

    let entropy = Rc::new(RefCell::new(Entropy::new(&sources::boot_samples(kernel))));
    let seed = entropy.borrow_mut().next_u64();
    let mut isn_key = [0u8; 32];
    entropy.borrow_mut().fill(&mut isn_key);
    let nic = TcpWire::new(nic, isn_key);
    let mut server_config = ServerConfig {
        ports: alloc::vec![port, 80],
        ..ServerConfig::for_heap(heap_usage().size)
    };
    // The server's sockets, the DHCP client's and the mDNS responder's.
    let sockets = server_config.sockets() + 2;
    let mut stack = NetStack::new(nic, mac, settings.ip, now, seed, sockets);
    match stack.ipv4() {
        Some(c) => kprintln!(
            kernel,
            "ip {} (static), MCP on port {port}, status page on 80",
            c
        ),
        None => kprintln!(kernel, "ip via DHCP, MCP on port {port}, status page on 80"),
    }

    let mut config = rpc::mcp::Config::new(identity.server_version(), Some(tools::instructions()));
    let (token, console_secret) = choose_token(kernel, settings.token, &mut entropy.borrow_mut());
    config.token = token;
    if let Some(span) = console_secret {
        flight.secret(span.start, span.end);
    }
    config.calls = Some(flight.clone());
    config.hosts = settings.hosts;
    let mdns = if settings.mdns {
        start_mdns(
            kernel,
            &mut stack,
            settings.name,
            port,
            &identity,
            config.token.is_some(),
        )
    } else {
        kprintln!(kernel, "mdns off (mcp.mdns=off)");
        None
    };
    if let Some(m) = &mdns {
        // The name it announces is one the machine is reached by.
        config.hosts.push(alloc::format!("{}.local", m.name()));
    }
    config.own_ip = stack.ipv4().map(|c| c.address().octets());
    // The conformance suites fire requests far faster than an agent does; the test image
    // lifts the per-client rate so they measure the protocol, not the limiter.
    #[cfg(feature = "conformance")]
    {
        config.limits.requests_per_second = 1000;
    }
    config.extra_origins = settings.origins;
    config.policy = settings.policy;
    // The conformance image also serves the official suites' fixtures, which are no door of
    // an Indy: it judges every door by its annotations, as a server given no table does.
    #[cfg(not(feature = "conformance"))]
    {
        config.capabilities = tools::capabilities::TABLE;
    }
    for t in &settings.tokens {
        kprintln!(kernel, "token {} ({})", t.name, t.role.text());
    }
    config.tokens = settings.tokens;
    config.confirm = settings.confirm;
    // Every audit record becomes a console line (so the kernel's serial ring and the rig's
    // console keep it) and a line of the in-module log, in the ring of its kind. The console
    // copy is bounded as the records are: failed logins come summarised, a few lines a window.
    let audit_log = Rc::new(RefCell::new(AuditLog::default()));
    let log = audit_log.clone();
    config.audit = Some(Rc::new(move |r: &rpc::mcp::AuditRecord| {
        kprintln!(kernel, "{r}");
        let kind = tools::system::audit_ring(r);
        if let Ok(mut log) = log.try_borrow_mut() {
            log.push(kind, &alloc::string::ToString::to_string(r));
        }
    }));

    let open_disk = move |t| KernelDisk::open(kernel, t).map(|d| Disk(Box::new(d)));
    let mut root = mount::mount_root(&settings.root, open_disk);
    kprintln!(kernel, "{}", root.line);
    // The block cache takes its blocks as files are read; the plan keeps room for all of them.
    let cache_room = root
        .fs
        .as_ref()
        .and_then(|fs| fs.lower())
        .map_or(0, |erofs| erofs.cache_stats().room());
    let screen = probe_screen(kernel);
    kprintln!(
        kernel,
        "screen {}",
        screen.as_ref().map_or_else(|e| *e, |_| "newport")
    );
    // Without a token no connection can prove one: no slot is kept for token holders.
    if config.token.is_none() {
        server_config.anonymous_per_port = server_config.sockets_per_port;
    }
    // The budgets are sized from what the module holds once up (planned here for the MCP
    // server, which takes the pools, and again once the tools are registered); the sockets'
    // buffers are in the per-connection share, since a socket holds them only while it listens
    // or connects.
    let heap = heap_usage();
    let overlay_max = settings.root.overlay_max;
    let budgets = ServerBudgets::plan(
        heap.size,
        heap.used + cache_room,
        &server_config,
        overlay_max,
    );
    // The overlay is one of the plan's holders: on a small heap its cap is the plan's share.
    if let Some(fs) = root.fs.as_mut()
        && budgets.overlay < overlay_max
    {
        fs.limit_cap(budgets.overlay);
        kprintln!(
            kernel,
            "overlay cap {} bytes: the memory plan's share of this heap (mcp.overlay_max {overlay_max})",
            budgets.overlay
        );
    }
    config.parse_budget = budgets.parse.clone();
    config.task_budget = budgets.tasks.clone();
    config.limits.event_streams = budgets.event_streams;
    let shell_pool = shell_output::pool(heap.size);
    let captures = png_pool();
    let memory = MemoryPlan {
        heap_budget: budgets.heap_budget,
        gauges: alloc::vec![
            Box::new(PoolGauge(budgets.requests.clone())),
            Box::new(PoolGauge(budgets.parse.clone())),
            Box::new(PoolGauge(budgets.tasks.clone())),
            Box::new(PoolGauge(shell_pool.clone())),
        ],
    };
    let services = Services {
        platform: Box::new(kernel),
        abi_version,
        heap: heap_usage,
        net: NetUsage::default(),
        pending: None,
        fs: root.fs,
        fs_error: root.error,
        open_disk: Box::new(open_disk),
        screen: screen.ok(),
        memory,
        shell_output: shell_pool,
        captures,
        events: Events::new(now),
        audit: audit_log,
        serial_waiters: Waiters::new(budgets.serial_waiters),
        console_secret,
        boot: Rc::new(boot),
        debugger: Debugger::new(Some(Rc::new(kernel))),
        policy: if config.confirm {
            alloc::format!(
                "{}, destructive tools ask first (mcp.confirm)",
                config.policy.text()
            )
            .into()
        } else {
            config.policy.text().into()
        },
    };
    // SAFETY: the raw bus goes to the device tools alone, which check every address against the
    // board's map and the kernel's probe, and whose descriptions say they can hang the machine.
    let raw = RawAccess::granted(Box::new(unsafe { KernelRawBus::mint(kernel) }));
    let mut ctx = Ctx::new(services, raw);
    ctx.services_mut().record_boot(now);
    let ctx = Rc::new(RefCell::new(ctx));
    let drbg = entropy.clone();
    let session_entropy: rpc::mcp::Entropy = Box::new(move |buf: &mut [u8]| {
        let mut e = drbg.borrow_mut();
        e.stir(sources::event_sample(kernel.clock_ms()));
        e.fill(buf);
    });
    let confirm_on = config.confirm;
    let mut mcp = rpc::mcp::McpServer::new(config, ctx.clone(), session_entropy);
    tools::register(&mut mcp).map_err(|e| {
        kprintln!(kernel, "tool registry: {e}");
        status::E_INVAL
    })?;
    kprintln!(
        kernel,
        "policy {}: {} of {} tools offered{}",
        mcp.tools().policy().text(),
        mcp.tools().offered(),
        mcp.tools().len(),
        if confirm_on {
            "; destructive ones ask for consent (mcp.confirm)"
        } else {
            ""
        }
    );
    // The test image also carries the fixtures the official conformance suites call.
    #[cfg(feature = "conformance")]
    rpc_conformance::register(&mut mcp).map_err(|e| {
        kprintln!(kernel, "conformance fixtures: {e}");
        status::E_INVAL
    })?;
    // Every tool is registered: each page of the listing is deflated once, for the clients
    // that accept `deflate` (docs/mcp.md).
    mcp.pack_listings();
    let heap = heap_usage();
    budgets.replan(heap.size, heap.used + cache_room, &server_config);
    server_config.http.limits.body = server_config.http.limits.body.min(budgets.requests.limit());
    let server = HttpServer::new(&server_config, budgets.requests);
    Ok(Module {
        kernel,
        stack,
        server,
        router: Router::new(mcp, port),
        ctx,
        port,
        entropy,
        mdns,
        flight,
    })
}

/// The mDNS responder under `name` (`mcp.name` or the MAC's default), announcing the MCP port.
fn start_mdns(
    kernel: Kernel,
    stack: &mut NetStack<Nic>,
    name: String,
    port: u16,
    identity: &Identity,
    token: bool,
) -> Option<Responder> {
    let txt = alloc::vec![
        String::from("path=/mcp"),
        alloc::format!(
            "eras={},{}",
            rpc::mcp::MODERN_VERSION,
            rpc::mcp::LEGACY_VERSIONS[0]
        ),
        alloc::format!("version={}", identity.server_version()),
        alloc::format!("build={}", crate::services::identity::BUILD_ID),
        String::from(if token { "auth=bearer" } else { "auth=none" }),
    ];
    match Responder::new(stack, name, port, txt) {
        Ok(m) => {
            kprintln!(
                kernel,
                "mdns: {}._mcp._tcp.local on {}.local",
                m.name(),
                m.name()
            );
            Some(m)
        }
        Err(why) => {
            kprintln!(kernel, "mdns off: {why}");
            None
        }
    }
}

/// The token `/mcp` requires, or `None` for `mcp.token=none`, and where in the serial ring a
/// generated one was printed. A generated token goes to the serial line alone (ABI 14's
/// `serial_write`): a console the kernel draws on the screen is in every picture of it, and
/// pictures are an observe door. On an older kernel it is not shown at all (`/mcp` then takes
/// only `mcp.token` or `mcp.tokens`), and the console says so. `docs/security.md`.
fn choose_token(
    kernel: Kernel,
    choice: TokenChoice,
    entropy: &mut Entropy,
) -> (Option<String>, Option<Span>) {
    match choice {
        TokenChoice::Use(token, source) => {
            let from = match source {
                access::Source::Environment => "mcp.token",
                access::Source::Build => "built into the image",
            };
            kprintln!(kernel, "token required ({from})");
            (Some(token), None)
        }
        TokenChoice::Open => {
            kprintln!(
                kernel,
                "token none: /mcp is OPEN to anyone on the network (mcp.token=none)"
            );
            (None, None)
        }
        TokenChoice::Generate(refused) => {
            if let Some((source, why)) = refused {
                kprintln!(kernel, "{}", access::refusal_text(source, why));
            }
            let mut bytes = [0u8; access::GENERATED_BYTES];
            entropy.fill(&mut bytes);
            let token = access::token_text(&bytes);
            match show_token(kernel, &token) {
                Ok(span) => {
                    kprintln!(
                        kernel,
                        "token generated, on the serial line only (set mcp.token to choose one, mcp.token=none to open /mcp)"
                    );
                    (Some(token), Some(span))
                }
                Err(_) => {
                    kprintln!(
                        kernel,
                        "token generated, not shown: this kernel (ABI < 14) would draw it on the screen; set mcp.token to reach /mcp"
                    );
                    (Some(token), None)
                }
            }
        }
    }
}

/// Prints the generated token's line on the serial line alone; the ring's head before and after
/// the token itself is its span.
fn show_token(kernel: Kernel, token: &str) -> Result<Span, i32> {
    kernel.serial_write(b"irix7-mcp: token generated: ")?;
    let start = kernel.serial_head();
    kernel.serial_write(token.as_bytes())?;
    let span = Span {
        start,
        end: kernel.serial_head(),
    };
    kernel.serial_write(b" (serial line only)\n")?;
    Ok(span)
}

/// One non-blocking step of the module's work. Returns > 0 when more work is pending (call
/// again soon), 0 when idle, < 0 when the module is not initialised.
#[unsafe(no_mangle)]
pub extern "C" fn irix7_mcp_poll(now_ms: u64) -> i32 {
    match MODULE.lock().as_mut() {
        Some(m) => m.poll(now_ms),
        None => status::E_INVAL,
    }
}

/// Stops the NIC's DMA (the driver's drop) and releases everything.
#[unsafe(no_mangle)]
pub extern "C" fn irix7_mcp_exit() {
    if let Some(m) = MODULE.lock().take() {
        kprintln!(m.kernel, "exit");
    }
}

/// The Newport driver if a board answers in the GIO slot, or why there is none. An empty slot
/// bus-errors, so only the kernel can look (REX3 STATUS under its bus-error handler): on a
/// kernel without `bus_probe` (ABI 10) the module does not risk the read and has no screen.
fn probe_screen(kernel: Kernel) -> Result<Box<dyn Framebuffer>, &'static str> {
    use crate::drivers::newport::Newport;
    use crate::hil::newport_bus::NewportBus;
    use indy::regs::rex3;
    match kernel.bus_probe(rex3::phys(rex3::STATUS), 4) {
        Ok(()) => {}
        Err(status::E_NOSYS) => return Err("unprobed (kernel ABI 10 has no bus_probe)"),
        Err(_) => return Err("none"),
    }
    // SAFETY: the kernel's probe of the board's STATUS register answered.
    let mut fb = Newport::new(unsafe { Kseg1Rex3::new() });
    if rex3::version(fb.bus_mut().read32(rex3::STATUS)).is_none() {
        return Err("none (no REX3 version in STATUS)");
    }
    Ok(Box::new(fb))
}
