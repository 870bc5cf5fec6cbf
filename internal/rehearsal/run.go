package rehearsal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The process side of the rehearsal engine: the API server (vLLM's
// APIServer, SGLang's main process) starts a worker child (vLLM's
// EngineCore, SGLang's scheduler) that "loads" the model, then serves.

// apiServer runs the engine's main process; argv is the emulated command
// line, given again to the worker child.
func (e *engineRun) apiServer(env Env, argv []string) int {
	proc := fmt.Sprintf("APIServer pid=%d", os.Getpid())
	if e.kind == KindSGLang {
		proc = "" // SGLang's main process logs without a tag
	}
	l := newLogger(e.kind, e.version, env.Stdout, env.Stderr, proc)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)

	e.logStart(l)
	if exc := e.parserError(); exc != "" {
		l.raw(traceback(e.parserFrames(), exc)...)
		return 1
	}
	var sock *boundSocket
	if e.kind == KindVLLM {
		var err error
		release := e.holdPortIfInjected()
		sock, err = bindSocket(e.host, e.port)
		release()
		if err != nil {
			l.raw(traceback(e.bindFrames(), "OSError: [Errno 98] Address already in use")...)
			if !errors.Is(err, syscall.EADDRINUSE) {
				l.raw(fmt.Sprintf("rehearsal: binding %s: %v", e.addr(), err))
			}
			return 1
		}
		defer sock.close()
	}
	if e.apiFailure() {
		frames, exc := e.apiError(e.failure)
		l.raw(traceback(frames, exc)...)
		return 1
	}
	e.logConfig(l)

	// The worker reports ready twice: a line on its ready pipe and SIGUSR1
	// to this process. A lost line (a start under load once hung here,
	// serving nothing, with the worker done) cannot hang the engine then.
	readySig := make(chan os.Signal, 1)
	signal.Notify(readySig, syscall.SIGUSR1)
	defer signal.Stop(readySig)
	w, err := e.spawn(env, argv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "rehearsal: cannot start the worker process: %v\n", err)
		return 1
	}
	defer w.stop()
	// A worker that neither reports nor exits is a bug of the rehearsal
	// engine: its goroutines and ours go to the log, then it fails.
	silence := time.NewTimer(e.k.loadTime + e.k.warmup + 90*time.Second)
	defer silence.Stop()
	select {
	case <-w.ready:
	case <-readySig:
	case <-w.exited:
		e.logStartFailed(l)
		return 1
	case <-sigs:
		return 0
	case <-silence.C:
		fmt.Fprintf(env.Stderr, "rehearsal: the worker (pid %d) has neither reported ready nor exited (ready pipe: %s); its goroutines and the API server's follow\n", w.cmd.Process.Pid, w.readLine())
		buf := make([]byte, 1<<20)
		env.Stderr.Write(buf[:runtime.Stack(buf, true)])
		_ = w.cmd.Process.Signal(syscall.SIGQUIT) // Go prints its goroutines and exits 2
		select {
		case <-w.exited:
		case <-time.After(10 * time.Second):
		}
		e.logStartFailed(l)
		return 1
	}

	opts := e.serveOptions()
	if e.kind == KindSGLang || !e.args.Bool("disable_uvicorn_access_log") {
		opts.AccessLog = func(remote, method, path string, status int) {
			l.uvicorn("INFO", fmt.Sprintf("%s - \"%s %s HTTP/1.1\" %d %s", remote, method, path, status, http.StatusText(status)))
		}
	}
	h := NewHandler(opts)
	var ln net.Listener
	if e.kind == KindVLLM {
		ln, err = sock.listen()
	} else {
		// uvicorn binds only now, after the model is loaded.
		release := e.holdPortIfInjected()
		ln, err = net.Listen("tcp", e.addr())
		release()
		if err != nil {
			l.uvicorn("ERROR", fmt.Sprintf("[Errno 98] error while attempting to bind on address ('%s', %d): address already in use", e.host, e.port))
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "rehearsal: listen: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	e.logServing(l)
	if e.kind == KindSGLang {
		h.SetState(StateStarting)
		if !e.k.fail.neverHealthy {
			time.AfterFunc(e.k.warmup, func() {
				if h.State() == StateStarting {
					h.SetState(StateReady)
					l.info("", "The server is fired up and ready to roll!")
				}
			})
		}
	}
	stopStats := e.logStats(l, h)
	defer stopStats()
	if f := e.k.fail; f.unhealthy {
		time.AfterFunc(f.unhealthyAfter, func() {
			h.SetState(StateDead)
			if e.kind == KindSGLang {
				l.level(l.err, "ERROR", "", fmt.Sprintf("Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: %s. last_heartbeat time: %s",
					time.Now().Add(-20*time.Second).Format("15:04:05"), time.Now().Add(-21*time.Second).Format("15:04:05")))
			} else {
				l.errorLines("core_client.py:564", "Engine core proc EngineCore_DP0 is not responding; health checks fail from now on.")
			}
		})
	}
	select {
	case <-sigs:
		h.SetState(StateStopping)
		e.logShutdown(l)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = srv.Shutdown(ctx)
		cancel()
		_ = srv.Close()
		w.stop()
		l.uvicorn("INFO", "Application shutdown complete.")
		return 0
	case <-w.exited:
		h.SetState(StateDead)
		e.logWorkerDied(l)
		time.Sleep(200 * time.Millisecond) // let running streams get their error event
		_ = srv.Close()
		return 1
	}
}

func (e *engineRun) addr() string {
	host := e.host
	if host == "" {
		host = "0.0.0.0"
	}
	return net.JoinHostPort(host, strconv.Itoa(e.port))
}

// holdPortIfInjected makes the port really busy for ROOFLINE_REHEARSAL_FAIL=port_in_use.
func (e *engineRun) holdPortIfInjected() (release func()) {
	if e.k.fail.class != ClassPortInUse {
		return func() {}
	}
	ln, err := net.Listen("tcp", e.addr())
	if err != nil {
		return func() {} // already busy: the bind fails anyway
	}
	return func() { _ = ln.Close() }
}

// apiFailure reports whether the failure is raised by the main process
// (configuration read before the worker starts).
func (e *engineRun) apiFailure() bool {
	switch e.failure.class {
	case "no_gpu", "too_few_gpus", "tp_heads":
		return true
	case ClassBadFlag:
		return e.failure.detail == "max_model_len"
	case ClassMissingFiles:
		return e.failure.detail == "config.json" || e.failure.detail == "tokenizer"
	case ClassUnsupportedArch:
		return e.kind == KindVLLM
	}
	return false
}

func (e *engineRun) parserFrames() []string {
	return []string{"/usr/local/bin/vllm:10:<module>:sys.exit(main())",
		vllmSite + "entrypoints/cli/main.py:73:main:args.dispatch_function(args)",
		vllmSite + "entrypoints/cli/serve.py:60:cmd:uvloop.run(run_server(args))",
		vllmSite + "entrypoints/openai/api_server.py:1905:run_server:listen_address, sock = setup_server(args)",
		vllmSite + "entrypoints/openai/api_server.py:1870:setup_server:validate_api_server_args(args)",
		vllmSite + "entrypoints/openai/api_server.py:1846:validate_api_server_args:raise KeyError("}
}

func (e *engineRun) bindFrames() []string {
	return []string{"/usr/local/bin/vllm:10:<module>:sys.exit(main())",
		vllmSite + "entrypoints/cli/main.py:73:main:args.dispatch_function(args)",
		vllmSite + "entrypoints/cli/serve.py:60:cmd:uvloop.run(run_server(args))",
		vllmSite + "entrypoints/openai/api_server.py:1905:run_server:listen_address, sock = setup_server(args)",
		vllmSite + "entrypoints/openai/api_server.py:1880:setup_server:sock = create_server_socket(sock_addr)",
		vllmSite + "entrypoints/openai/api_server.py:1800:create_server_socket:sock.bind(addr)"}
}

// workerProc is the running worker child.
type workerProc struct {
	cmd    *exec.Cmd
	alive  *os.File // the parent's end; the child exits when it closes
	ready  chan struct{}
	exited chan struct{}
	once   sync.Once
	// line is what the ready pipe gave, for the report of a silent worker.
	mu   sync.Mutex
	line string
}

func (w *workerProc) readLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.line == "" {
		return "nothing read yet"
	}
	return w.line
}

// childEnv is passed on to the worker so that it decides as the parent did.
var childEnv = []string{EnvInventory, EnvLoadTime, EnvWarmup, EnvTTFT, EnvITL, EnvAlpha, EnvPrefill,
	EnvOutputLen, EnvFail, EnvThinking, EnvToolFmt, "CUDA_VISIBLE_DEVICES", "VLLM_USE_V1",
	"VLLM_ALLOW_LONG_MAX_MODEL_LEN", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "VLLM_API_KEY"}

func (e *engineRun) spawn(env Env, argv []string) (*workerProc, error) {
	if len(env.Self) == 0 {
		return nil, errors.New("no command to run the rehearsal engine again (Env.Self is empty)")
	}
	aliveR, aliveW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		aliveR.Close()
		aliveW.Close()
		return nil, err
	}
	cmd := exec.Command(env.Self[0], append(append([]string{}, env.Self[1:]...), argv...)...)
	vars := os.Environ()
	for _, k := range childEnv {
		if v, ok := env.lookup(k); ok {
			vars = append(vars, k+"="+v)
		}
	}
	cmd.Env = append(vars, envRole+"=worker", envParent+"="+strconv.Itoa(os.Getpid()))
	cmd.Stdout, cmd.Stderr = env.Stdout, env.Stderr
	cmd.ExtraFiles = []*os.File{aliveR, readyW}
	cmd.SysProcAttr = workerAttr()
	if err := cmd.Start(); err != nil {
		aliveR.Close()
		aliveW.Close()
		readyR.Close()
		readyW.Close()
		return nil, err
	}
	aliveR.Close()
	readyW.Close()
	w := &workerProc{cmd: cmd, alive: aliveW, ready: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		line, err := bufio.NewReader(readyR).ReadString('\n')
		readyR.Close()
		w.mu.Lock()
		w.line = fmt.Sprintf("%q, %v", line, err)
		w.mu.Unlock()
		if strings.TrimSpace(line) == "ready" {
			close(w.ready)
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// stop ends the worker: SIGTERM, then SIGKILL after 5 s.
func (w *workerProc) stop() {
	w.once.Do(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.exited:
		case <-time.After(5 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.exited
		}
		_ = w.alive.Close()
	})
}

// worker is the child process: it logs the load at the engine's pace and
// reports ready, or logs the failure and exits 1.
func (e *engineRun) worker(env Env) int {
	alive, ready := os.NewFile(3, "alive"), os.NewFile(4, "ready")
	if alive != nil {
		go func() {
			_, _ = io.Copy(io.Discard, alive)
			os.Exit(0) // the API server is gone
		}()
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		os.Exit(0)
	}()
	proc := "TP0"
	if e.kind == KindVLLM {
		proc = fmt.Sprintf("EngineCore_DP0 pid=%d", os.Getpid())
	}
	l := newLogger(e.kind, e.version, env.Stdout, env.Stderr, proc)
	if !e.load(l) {
		return 1
	}
	if ready != nil {
		_, _ = ready.WriteString("ready\n")
		ready.Close()
	}
	// The second report (apiServer): SIGUSR1 to the API server that
	// started this worker, never to another process that became the parent.
	parent, _ := env.lookup(envParent)
	if pid, err := strconv.Atoi(parent); err == nil && pid > 1 && os.Getppid() == pid {
		_ = syscall.Kill(pid, syscall.SIGUSR1)
	}
	if e.k.fail.crash {
		time.Sleep(e.k.fail.crashAfter)
		e.logCrash(l)
		return 1
	}
	select {}
}
