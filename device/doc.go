// Package device is gpuinit's backend-neutral GPU runtime.
//
// [Open] returns the [Runtime] of a backend: cuda, hip, sim, or auto (the
// first GPU backend that works). It touches no driver. The first call that
// needs the devices initializes it, once: [Runtime.Init], [Runtime.Devices],
// [Runtime.Do], and the like.
//
// Work queued with [Runtime.LazyCall] runs right after the driver's init, in
// order. It may re-enter the Runtime without deadlocking. A queued call's
// failure is its own. The initialization's failure is memoized. It carries
// the driver's code, its name and a hint. [ClassOf] says whether to wait,
// fall back or call an operator. [FallBackToCPU] says whether the host has
// no GPU at all. [Runtime.UsePreflight] runs the driver's init in a child
// process first. A driver that hangs or crashes then kills the child, not
// the server.
//
// After init the Runtime watches its devices. Every driver call it makes runs
// under a deadline ([Runtime.SetCallDeadline]). The backend's health watch
// (NVML's events, amdgpu's RAS counters) loses a device that needs a reset.
// [Runtime.Canary] proves a device still works. [Runtime.Stats] says all of
// it at one moment, as [database/sql.DB.Stats] does. [Runtime.Shutdown]
// stops everything the Runtime runs, as [net/http.Server.Shutdown] does.
//
// Backends register with [Register] when their package is imported. Import
// package backends for every backend the build can have. Backends implement
// package driver's interface. A [Registry] other than [DefaultRegistry] gives
// a test or a program backends and Runtimes of its own.
//
// Every method is safe for concurrent use. Every method that takes a context
// panics on a nil one, naming itself, as net/http does. None waits past its
// context's end.
//
// # One Runtime per name
//
// Each registry gives a name one Runtime. Open("") and Open("auto") return the
// same one: one initialization, one queue. After its first Init, [Runtime.Name]
// is the backend auto chose. [Stats].PassedOver says why the others were not
// chosen. Open of the chosen name then returns this Runtime too.
//
// A name opened before auto chose gets a Runtime of its own, and never pins
// auto. A library that opens "cuda" on an AMD host does not stop auto from
// trying hip. If auto then chooses that backend, the two Runtimes share its
// driver, which cuda and hip initialize once per process. Each keeps its own
// queue, devices and error reports. Open "" everywhere, or a name after the
// first Init, to have one Runtime.
//
// # Falling back to the CPU
//
// [FallBackToCPU] is true only where the host has no GPU to use: class no-gpu.
// That is no driver library, a CGO_ENABLED=0 build, no GPU device node given
// to the process, or every GPU hidden on purpose. A broken driver, a typo in a
// setting, or a GPU not ready yet is never served around on the CPU. The
// server stays unready with the reason. The class says whether to wait or to
// call an operator; the section "Failure classes" below lists them.
//
// A setting that cannot be used is an error where it is read, never a silent
// default. Open checks every GPUINIT_* variable that is set, a misspelt name
// such as GPUINIT_PREFLIHGT included. It returns an error wrapping
// [ErrBadSetting] that names the variable. [Runtime.UsePreflight] checks
// GPUINIT_PREFLIGHT too. README.md lists the variables, from the code's one
// table of them ([Registry.Settings]).
//
// # The preflight
//
// A driver can hang in cuInit, or crash the process. It hangs on a GPU fallen
// off the bus, in confidential-computing mode, or with a ROCm 6 kernel driver
// under ROCm 7 libraries. And CUDA cannot retry cuInit in a process where it
// failed. [Runtime.UsePreflight] guards against both. Each candidate
// backend's init and device query then run first in a child process. The
// Runtime initializes the driver in its own process only after a child
// succeeded. GPUINIT_PREFLIGHT (on, off, or a deadline such as 30s) overrides
// only what it names. A deadline replaces [Preflight].Deadline, and off turns
// the preflight off. The code's other settings stand.
//
// The child is the server's own executable, exec'd through /proc/self/exe
// with GPUINIT_PREFLIGHT_CHILD, so it is the running binary even after a
// rolling upgrade replaced the file. It reports on file descriptor 3, never
// stdout, and runs package initialization only: importing package backends
// makes its init call [ServePreflight], which checks and exits. [Preflight]
// says how, and how a server without that import serves it. The child serves
// the backends that init functions register with [DefaultRegistry]. A
// backend the parent has and the child lacks fails needs-operator, never "no
// GPU here", and the error says how to give the child that backend.
//
// A child hung past its deadline (30 s by default) gets SIGQUIT, so that its
// stacks name the driver call (cuInit), then SIGKILL. The error wraps
// [driver.ErrInitHung] and carries the stacks. A crash is a signal from the
// driver's C code, named with its call ("crashed with SIGSEGV, in cuInit"),
// and is not-yet. A Go panic in the child is needs-operator, never retried:
// a fresh child runs the same code into the same panic. The error names its
// "panic:" line and the frame, the file as -trimpath prints it:
//
//	panicked in sim.(*Backend).Init at github.com/gpuinit/gpuinit/device/sim/sim.go:188: panic: ...
//
// Children die with the server, even when it is killed with SIGKILL.
//
// A not-yet failure is retried in a fresh child, 1 s doubling to 30 s, for 5
// minutes by default ([Preflight].RetryFor). [Stats].BringUp says where it
// stands: the phase, the attempts, the last error and its class, and the next
// attempt. /gpuinit/status and gpuprobe show it. A backend whose driver the
// process has initialized already gets no child: there is nothing left to
// protect. That driver may be another Runtime's, or a cgo engine's libcuda,
// seen without loading anything.
//
// The child's init runs once more than without the preflight. On a real GPU
// it costs what an in-process one does: 1–3 s per GPU without persistence
// mode (nvidia-smi -pm 1 turns it on). [Preflight].Prestart starts the first
// child ahead, so the first Init does not wait for its process start. The
// example server's package doc (examples/server) gives the costs.
//
// # Queued calls and re-entry
//
// A callback may call LazyCall and Init on its Runtime. It passes on the ctx
// it was given, or uses context.Background(). A re-entrant LazyCall runs at
// once, and a re-entrant Init returns. Goroutines a callback starts count as
// part of the initialization when they get its ctx.
//
// The limit, plainly: a callback may start a goroutine with a foreign context
// (context.Background(), a request's). If it then waits for that goroutine's
// Init, or for a call it queued, it deadlocks, as a re-entrant sync.Once.Do
// does. Go has no goroutine-local storage to tell that goroutine apart. The
// rule that avoids it: pass the callback's ctx on. The watchdog reports such
// a hang with every goroutine's stack. A re-entrant Init from a queued
// function returns nil: init has succeeded by then.
//
// A queued call's failure is its own. A function queued with LazyCall may
// fail or panic when it runs. That does not fail the initialization, which
// every caller shares. The calls queued after it run, and the Runtime becomes
// ready. The failure is recorded with the call site that queued it
// ([Stats].FailedCalls, failed_calls in the health status). No other call
// returns it. PyTorch raises such a failure from whatever call initializes,
// and re-runs the whole queue at the next one, so one bad call stops every
// caller. Package lazy alone keeps its strict rule unless told otherwise
// ([lazy.WithQueuedFailures]).
//
// # What a server can learn and do
//
// [Runtime.Memory] gives a device's free and total memory, live, and names
// its source ([driver.MemorySource]): NVML by UUID (a MIG instance's own
// slice), an active primary context, amdgpu's VRAM or GTT counters, or the
// host's meminfo for a GPU that shares the host's memory. It never creates a
// context or allocates. Unified memory is told from the device's attributes,
// never by comparing sizes. Where no source is true, it says "unknown"
// ([ErrNotSupported], with the reason) rather than give a wrong number.
//
// [Runtime.DeviceMap] gives each ordinal's NVML index (nvidia-smi's number)
// or libhsakmt node id, UUID and PCI bus id, and the visibility entry that
// selected it, parsed as the runtimes parse it. It warns when the order is
// not PCI order on a host with more than one model.
//
// [Inventory] lists the devices of both vendors' runtimes, each once: by PCI
// bus id, and MIG instances, which share their GPU's, by UUID. Auto still
// chooses one backend per process. [Stats].PassedOver says when the other
// vendor's GPUs are present ([driver.ErrOtherVendor]). HIP reads
// CUDA_VISIBLE_DEVICES when HIP_VISIBLE_DEVICES is unset. On a mixed host, set
// HIP_VISIBLE_DEVICES too, or hiding NVIDIA GPUs hides the AMD ones.
//
// On AMD, [Info].Arch is the target ROCm runs the device as. That is after
// HSA_OVERRIDE_GFX_VERSION, or HSA_OVERRIDE_GFX_VERSION_<n> (ROCm 6.3 on, n
// the libhsakmt node id). CPU nodes count, so the first GPU is usually 1.
// NativeArch, ArchSource and ArchWarning say what an override changed. They
// warn when it crosses ISA families. hip.KernelsCover says whether a rocBLAS
// library directory covers a device.
//
// [Runtime.Do] runs a function on a locked OS thread with the device current,
// and restores the thread's own afterwards. On CUDA that is its primary
// context, retained once for the process and shared with the generators. On
// HIP it is hipSetDevice. The CUDA runtime (cudart, cuBLAS, llama.cpp) shares
// that primary context.
//
// [Runtime.RequireDriverVersion], before the first Init, raises the driver
// floor to what the server's engine needs: RequireDriverVersion("cuda",
// 12040). Too old is [ErrDriverMismatch] with both versions; under auto, that
// backend is passed over. The backends check their own floors first: CUDA's
// is 11000, before cuInit; HIP checks its symbols at load. The Runtime checks
// the server's floor after the backend's Init. So every Runtime is held to its
// own floor, whichever initialized the driver first.
//
// [Runtime.ReportError] and [Runtime.ReportDriverCode] take the errors of the
// engine's own driver calls. Sticky ones lose the device: CUDA's 700, 702,
// 710, 714 to 719 and 214, and HIP's equivalents. [Stats].Lost lists the
// losses. Other errors are counted. A report for an ordinal the Runtime does
// not have, or does not know yet, is refused: it wraps [ErrInvalidDevice].
//
// # MIG
//
// Each MIG instance CUDA enumerates is one [Info]. It has its own MIG- UUID.
// Info.MIG holds its parent GPU's UUID and PCI bus id, its GPU- and
// compute-instance ids, and its profile (1g.10gb), from NVML. Its
// multiprocessors and memory are the slice's. Memory reads the instance's own
// NVML handle, by UUID; by bus id NVML would give the whole GPU's.
//
// What CUDA enumerates by CUDA_VISIBLE_DEVICES on a MIG-enabled GPU changed
// at R570. The parent's GPU- UUID selects no device (ollama #13800: validate
// with the MIG UUID). device/internal/visibility models NVIDIA's MIG user
// guide ("CUDA Device Enumeration"), and its MIG.md has the full table.
// R570's enumeration is tested end to end over the fake libcuda and NVML
// (GPUINIT_FAKE_CUDA_MIG=1,2): two instances of one GPU beside a whole GPU.
//
// # After init: deadlines, health events, the canary
//
// A GPU that dies or hangs after init is seen without the engine's help. Each
// loss has its [LossSource]: engine, deadline, xid, ecc, ras or canary.
//
// Call deadlines. Every driver call the Runtime makes after init runs under
// [Runtime.SetCallDeadline]: Do's function, generator draws, Memory, and the
// canary. The default is 60 s ([DefaultCallDeadline]); it may be set before
// Init or after. A call that passes it loses its device as hung
// ([driver.ErrDeviceHung], which wraps [ErrDeviceLost]). That is seen within a
// quarter of the deadline, and at most 25 ms after it. Readiness is then 503,
// and with health.WithRestartOnDeviceLoss liveness too. The thread stays in the
// driver, and nothing waits for it. The generators' draws behind it return when
// their own context ends. Shutdown does not wait for it at all, and says it
// abandoned the call.
//
// NVIDIA health events. With NVML, a watch the Runtime owns registers each GPU
// for Xid and ECC events. It is started at init and stopped by Shutdown. It
// finds each GPU by UUID, and blocks in nvmlEventSetWait_v2 a second at a time.
// Xids are classified by NVIDIA's Xid catalog (resolution buckets, edition
// 2025-10, Xid 1 to 172, in device/internal/drivercodes). An application's Xid (13,
// 31, 43…) is counted, and the device stays ready. One that needs a GPU reset,
// a reboot or service (79 fallen off the bus, 48, 94, 95, 119, 120, 64…) loses
// the device with the Xid's name. A double-bit ECC error loses it; a
// single-bit one is counted.
//
// The watch reads the counters a server should see at the start and every
// 30 s. They are ECC mode and volatile counts, pending and failed row remaps,
// retired pages and a pending retirement (GPUs before Ampere), persistence
// mode, and clock throttle reasons. Without NVML, or on a GPU with no event
// API (Jetson, some vGPU), the device's health is unknown, and says so; never
// "healthy". An NVML error while waiting is reported and retried with
// backoff, back to 1 s once a wait succeeds, and loses nothing. Shutdown waits
// for the watch until its ctx ends. A watch stuck in NVML on a dead GPU is
// then abandoned, and each device's health says so, so Shutdown never hangs on
// it.
//
// AMD RAS. The hip backend reads amdgpu's RAS counters at init and every
// GPUINIT_RAS_PERIOD (10 s). They are ras/<block>_err_count under the GPU's
// PCI device, found by bus id; GPUINIT_SYSFS_ROOT moves /sys. A rise in
// uncorrectable errors loses the device; correctable ones are counted. A board
// without RAS counters has unknown health.
//
// The readiness canary (health.WithCanary, the example server's -canary) is a
// 4-byte round trip per device, on a period. It allocates, sets on the device,
// copies back and frees. It runs off the probe path, under the call deadline,
// one at a time per device. A sticky failure or a wrong pattern loses the
// device. [Runtime.Canary] runs one by hand.
//
// [Stats].Health gives each device's health: watched or why not, the events
// counted against it ("xid 13", "ecc corrected", "ras correctable"), its
// counters and the watch's last error. Package health's doc lists the
// verdicts. The anchor: NVIDIA's device plugin treats every Xid but six as
// fatal, drops ECC events, marks every device unhealthy on a wait error, and
// never recovers. This watch follows the catalog, per device, and retries.
// sim's InjectXid and InjectHealthEvent let a server's own tests do the same.
//
// # Stats and Shutdown
//
// [Runtime.Stats] is the Runtime at one moment, as database/sql's DB.Stats is
// a DB. It holds the state and its times, and what the initialization runs
// now. It holds the failure, the bring-up, the backends passed over and the
// visibility settings. It holds each device's health, the losses, the errors
// counted, the queued calls that failed, and the watches' state. It takes no
// lock. Its slices and maps are the caller's own copies, to keep or change.
// The health handlers read the same state without copies, and allocate
// nothing.
//
// [Runtime.Shutdown] stops everything the Runtime runs, as net/http's
// Server.Shutdown does. From its start every call returns [ErrClosed]. It runs
// the functions registered with [Runtime.RegisterOnShutdown], each on its own
// goroutine; health.New and rng.New register their Close there. It kills a
// preflight child under way, ends the waits between attempts, and stops the
// health watch. Then it waits for the initialization under way, the calls in
// flight and the health watch, until ctx ends.
//
// Nothing is waited for past that, and nothing known to hang is waited for at
// all. A call on a device lost as hung is abandoned at once, and so is a
// health watch whose driver call is past its deadline. The error names each
// thing abandoned: a function and who registered it, the driver's init, or the
// watch's call. It wraps ctx.Err() where ctx ended, and
// [driver.ErrDeviceHung] where the thing was known hung. An initialization
// that Shutdown ended is ErrClosed, with no class, whatever the backend made
// of its ended context. Stats still answers afterwards, with the devices it
// knew. Open of the name gives a fresh Runtime, never the closed one.
//
// # Failure classes
//
// Every initialization failure has one [Class], from one table in this
// package. The first row that matches decides. [ClassOf] gives it, and
// [FallBackToCPU] is true for no-gpu alone. Health checks decide by it, and
// gpuprobe's labels and metrics carry it. The table, row by row:
//   - no-gpu: the backend is not in this binary (its package not imported, or built without cgo)
//   - needs-operator: a library file the user named (GPUINIT_CUDA_LIBRARY, GPUINIT_HIP_LIBRARY…)
//     that is not there, does not load, or is a second copy beside one loaded; a library found
//     whose dependency is missing
//   - no-gpu: no driver library, or only the toolkit's link stub (CUDA 34)
//   - no-gpu: a library that lacks a function the backend needs (dlsym), or answers what no driver
//     does
//   - no-gpu: a driver older than the backend's floor or RequireDriverVersion's (CUDA 35 too)
//   - not-yet: the system is not ready yet (CUDA 802: the fabric manager still starting)
//   - no-gpu: no device, and a visibility setting leaves the driver none, as the driver reads it,
//     whatever the host's devices (CUDA_VISIBLE_DEVICES empty, -1, gpu0 or 0,0;
//     NVIDIA_VISIBLE_DEVICES=void; HIP_VISIBLE_DEVICES=-1)
//   - not-yet: no device, while a GPU device node is given to the process (/dev/nvidia0, /dev/kfd):
//     the driver has not found the GPU yet
//   - no-gpu: no device, and no GPU device node, whatever /proc or sysfs shows of the host (a
//     container given no GPU, an AMD pod without /dev/kfd)
//   - needs-operator: a preflight child's Go panic, in the backend's Go code or in a package init
//     the child runs: a fresh child panics again
//   - not-yet: a preflight child that hung past its deadline, or crashed: a signal ended it (a
//     fault or abort in the driver's C code)
//   - needs-operator: anything else: user-space and kernel driver differ (CUDA 803), forward
//     compatibility on an unsupported GPU (804), 999 after suspend/resume, not permitted (800), a
//     panic in the driver's init
//
// What each class means for a server:
//   - no-gpu: a restart cannot help. Liveness stays 200. Readiness is 503 with the reason, unless
//     the server serves without a GPU (health.WithCPUFallback). Then it is 200, and the status
//     says degraded.
//   - not-yet: expected to clear by itself. With the preflight on, it is retried in a fresh child
//     (1 s doubling to 30 s, for 5 minutes by default). No in-process init ever fails for it. Once
//     the init deadline (5 minutes by default) has passed since initialization began, liveness
//     fails, since a fresh process may succeed. Without the preflight an in-process 802 is final
//     at once. Liveness still waits out the deadline, so the GPU has its time to come up.
//   - needs-operator: liveness stays 200, since a restart does not fix a kernel/user driver
//     mismatch. Readiness is 503. The class is in the status and gpuprobe's metrics, so that an
//     alert fires.
//
// # Failure catalogue
//
// Each of these is reproduced in the tests through the fake driver libraries,
// with its hint. What it is, how it shows, and what the hint says to do:
//   - No NVIDIA driver library: dlopen failed, [ErrDriverNotFound]. Install the driver; in a
//     container, --gpus all and the NVIDIA container toolkit.
//   - The toolkit's stub libcuda.so found: 34 CUDA_ERROR_STUB_LIBRARY, with the path loaded.
//     Install the driver, or remove the stubs directory from LD_LIBRARY_PATH.
//   - A driver older than needed: 35 CUDA_ERROR_INSUFFICIENT_DRIVER, or the floor's
//     ErrDriverMismatch with both versions, before cuInit. Upgrade the driver.
//   - A required symbol missing: dlsym failed naming it, ErrDriverMismatch. Upgrade the driver
//     or ROCm.
//   - No device: 100 CUDA_ERROR_NO_DEVICE. Check CUDA_VISIBLE_DEVICES, nvidia-smi, --gpus all.
//   - A visibility setting that hides every GPU: 100, with CUDA_VISIBLE_DEVICES="-1" or
//     NVIDIA_VISIBLE_DEVICES="void" (or empty, none, NoDevFiles) named first in the hint. Unset
//     it, or name the GPUs.
//   - The fabric manager not running (HGX or DGX with NVSwitch): 802
//     CUDA_ERROR_SYSTEM_NOT_READY. systemctl start nvidia-fabricmanager, matching the driver's
//     version.
//   - User-space and kernel driver differ: 803 CUDA_ERROR_SYSTEM_DRIVER_MISMATCH. Reboot after
//     a driver upgrade, or match the container's libcuda to the host.
//   - Forward compatibility on an unsupported GPU: 804 CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE.
//     Use a CUDA the host driver supports natively, or drop cuda-compat.
//   - nvidia_uvm broken after suspend and resume: 999 CUDA_ERROR_UNKNOWN. rmmod nvidia_uvm &&
//     modprobe nvidia_uvm, or reboot.
//   - No ROCm runtime: dlopen failed, ErrDriverNotFound. Install ROCm's HIP runtime; passing
//     /dev/kfd fixes "no device", not this.
//   - No /dev/kfd: 101 (ROCm before 6.2) or 100 from hipInit, [ErrNoDevice]. modprobe amdgpu;
//     in a container, --device=/dev/kfd --device=/dev/dri.
//   - /dev/kfd without permission: the same codes. Add the user to the render and video groups
//     (--group-add).
//   - A gfx target the ROCm libraries have no code for: HIPRAND_STATUS_LAUNCH_FAILURE (201) at
//     the first draw, hipErrorNoBinaryForGpu (209). A ROCm that supports it, or
//     HSA_OVERRIDE_GFX_VERSION to a supported target of the family (10.3.0, 11.0.0).
//
// # How a device comes up
//
// The walk from [Open] to a ready device has its steps in five files
// (registry.go, runtime.go, init.go, bringup.go, preflight.go), over lazy
// and device/internal/preflight:
//  1. [Open] (registry.go) finds the name and opens its backend once per
//     [Registry], touching no driver. newRuntime (runtime.go) makes the
//     [Runtime], whose lazy.Initializer will run initialize.
//  2. The first [Runtime.Init] or [Runtime.Start] (init.go), or device call,
//     runs initialize (init.go) through lazy, once. It enters the closing
//     state (shutdown.go), so that [Runtime.Shutdown] can wait for it.
//  3. bringUpFirst (bringup.go) starts a bringup, the initialization's state
//     machine. bringup.begin reads the settings and the visibility variables
//     (readSettings, init.go), then bringup.run tries each candidate. Each
//     step is a method that publishes its phase ([BringUp], in [Stats]).
//  4. bringup.try runs the preflight child first where it is on
//     (bringup.checkInChild, then runPreflight, preflight.go, over
//     device/internal/preflight; the child runs [ServePreflight]). Then it
//     runs the backend's Init here, the driver floor (checkDriverFloor,
//     init.go) and the device query. bringup.run retries a child's not-yet
//     failure in a fresh child after bringup.wait, until RetryFor.
//  5. On success, bringup.ready calls watchAfterInit (init.go). It starts the
//     call deadline and the health watch, both from device/internal/watch.
//  6. lazy runs the calls queued by [Runtime.LazyCall], in call order and
//     under no lock. A failure is recorded with its site (queuedCallFailed,
//     init.go). The device is ready.
//
// A failure leaves the walk at bringup.fail, which gives it its class
// (class.go). bringup.finalError builds the one error (failure, errors.go)
// that lazy memoizes. It carries the class and the host's evidence, over the
// backend's error or auto's [NoBackendError]. errors.As finds lazy's
// InitError in it. The driver's error is at most three layers down.
//
// The other files: calls.go ([Runtime.Do] and what runs after init),
// health.go (health, losses), stats.go, inventory.go and env.go (the
// variables). docs/INSIDE.md says who imports whom in the module.
package device
