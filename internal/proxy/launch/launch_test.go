package launch

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/driver/process"
	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/state"
	"github.com/roofline/roofline/internal/testnet"
)

// TestMain lets the test binary stand in for "roofline proxy" (the same
// flags, the real proxy), or for a proxy that fails at once.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "proxy" || os.Args[1] == "proxy-fails") {
		os.Exit(runProxy(os.Args[1], os.Args[2:]))
	}
	os.Exit(m.Run())
}

func runProxy(mode string, args []string) int {
	if mode == "proxy-fails" {
		fmt.Println("Error: roofline proxy: listen tcp: address already in use")
		return 1
	}
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	listen, target := fs.String("listen", "", ""), fs.String("target-file", "", "")
	status, key := fs.String("status-file", "", ""), fs.String("api-key-file", "", "")
	limits := fs.String("limits-file", "", "")
	if fs.Parse(args) != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := proxy.New(*target, *status).WithKeyFile(*key).WithLimitsFile(*limits).Run(ctx, *listen); err != nil {
		fmt.Println("Error:", err)
		return 1
	}
	return 0
}

func backend(t *testing.T, name string) int {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }))
	t.Cleanup(s.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	n, _ := strconv.Atoi(port)
	return n
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func newLauncher(t *testing.T, mode string) (Launcher, *driver.Set) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	set := driver.NewSet().Register(state.DriverProcess, process.New(), process.About{})
	return Launcher{Drivers: set, StateDir: t.TempDir(), Command: []string{exe, mode}}, set
}

// A proxy is started through the driver, recorded before and after its
// start, forwards to its backend, and is pointed at the next one without a
// restart; a key is enforced from its file.
func TestEnsureStartsThenPoints(t *testing.T) {
	l, set := newLauncher(t, "proxy")
	ctx := context.Background()
	port := testnet.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d/v1/models", port)
	var records []string
	record := func(p *state.Instance, started bool) error {
		records = append(records, fmt.Sprintf("%v launch=%v pid=%v", started, p.LaunchID != "", p.PID != 0))
		return nil
	}

	p, err := l.Ensure(ctx, Request{Name: "s", Host: "127.0.0.1", Port: port, Backend: backend(t, "one"), Kind: "vllm", Version: "0.16.0"}, record)
	if p != nil {
		t.Cleanup(func() { _ = set.Stop(context.Background(), *p, 5*time.Second) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"false launch=true pid=false", "true launch=true pid=true"}; fmt.Sprint(records) != fmt.Sprint(want) {
		t.Errorf("records = %q, want %q", records, want)
	}
	if code, body := get(t, url, ""); code != 200 || body != "one" {
		t.Errorf("through the proxy: %d %q, want 200 \"one\"", code, body)
	}

	records = nil
	two := backend(t, "two")
	p2, err := l.Ensure(ctx, Request{Name: "s", Host: "127.0.0.1", Port: port, Backend: two, Kind: "vllm", Key: "k3y", Current: p}, record)
	if err != nil {
		t.Fatal(err)
	}
	if p2.PID != p.PID || len(records) != 0 {
		t.Errorf("a running proxy was replaced (pid %d → %d, records %q): it should be pointed", p.PID, p2.PID, records)
	}
	if code, body := get(t, url, "k3y"); code != 200 || body != "two" {
		t.Errorf("after the switch: %d %q, want 200 \"two\"", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, _ := get(t, url, "")
		if code == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("without the key: %d, want 401", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := proxy.BackendPort(l.StateDir, "s"); got != two {
		t.Errorf("the target file names port %d, want %d", got, two)
	}
}

// A proxy that exits says why, from its log.
func TestEnsureReportsAProxyThatExits(t *testing.T) {
	l, _ := newLauncher(t, "proxy-fails")
	_, err := l.Ensure(context.Background(), Request{Name: "s", Host: "127.0.0.1", Port: testnet.FreePort(t), Backend: 1}, func(*state.Instance, bool) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "the proxy exited: Error: roofline proxy: listen tcp: address already in use") {
		t.Fatalf("err = %v, want the proxy's last log line", err)
	}
}
