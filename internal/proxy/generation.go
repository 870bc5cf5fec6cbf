package proxy

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/roofline/roofline/internal/fsx"
)

// A generation is the http.Server that new client connections go to. The
// header and idle timeouts are fields of http.Server, read by its
// connections while they run, so a change of them starts a new generation
// instead of writing them: new connections get the new timeouts, and the
// previous generation's connections finish their requests (streams
// included) and close after their next response ("Connection: close", so
// no client sends a request on a connection being closed). Nothing is
// restarted and no connection is cut. Every generation accepts from the
// one listener itself (no hand-off between goroutines on the accept path);
// a retired one serves the connection it may still be accepting, then stops.
type generation struct {
	srv  *http.Server
	done chan struct{}
	once sync.Once
}

type genKey struct{}

func (p *Proxy) newGeneration(l Limits) *generation {
	g := &generation{done: make(chan struct{})}
	g.srv = &http.Server{Handler: p, ReadHeaderTimeout: l.HeaderTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: 1 << 20,
		BaseContext: func(net.Listener) context.Context { return context.WithValue(context.Background(), genKey{}, g) }}
	return g
}

// retire stops the generation's accepting; its connections run on.
func (g *generation) retire() { g.once.Do(func() { close(g.done) }) }

func (g *generation) retired() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// stale reports whether r came on a connection of a retired generation.
func (p *Proxy) stale(r *http.Request) bool {
	g, _ := r.Context().Value(genKey{}).(*generation)
	return g != nil && g != p.gen.Load()
}

// genListener is the listener as one generation's server sees it: at most
// MaxConns connections open at once, all generations together (more wait
// in the listen queue until one closes).
type genListener struct {
	net.Listener
	g *generation
	p *Proxy
}

func (l genListener) Accept() (net.Conn, error) {
	if l.g.retired() {
		return nil, net.ErrClosed
	}
	l.p.conns.acquire()
	c, err := l.Listener.Accept()
	if err != nil {
		l.p.conns.release()
		return nil, err
	}
	return &limitedConn{Conn: c, release: l.p.conns.release}, nil
}

// Close retires the generation; the listener itself stays open for the
// next one (Run closes it).
func (l genListener) Close() error { l.g.retire(); return nil }

// serve runs generation g's server on ln. Only the current generation's
// end is reported on errc: a retired one ends because it was replaced.
func (p *Proxy) serve(ln net.Listener, g *generation, errc chan<- error) {
	err := g.srv.Serve(genListener{Listener: ln, g: g, p: p})
	if g.retired() {
		return
	}
	select {
	case errc <- err:
	default:
	}
}

// shutdown lets every generation's in-flight requests finish, up to ctx.
func (p *Proxy) shutdown(ctx context.Context) {
	p.genMu.Lock()
	gens := append([]*generation{p.gen.Load()}, p.old...)
	p.genMu.Unlock()
	var wg sync.WaitGroup
	for _, g := range gens {
		if g == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = g.srv.Shutdown(ctx) }()
	}
	wg.Wait()
}

// reloadLimits re-reads the limits file when it changed: body and buffer
// limits apply to the next request, MaxConns to the next accept, and new
// header or idle timeouts start a new generation. A missing file means the
// limits the proxy was started with.
func (p *Proxy) reloadLimits() {
	if p.limitsFile == "" {
		return
	}
	next := p.base
	info, err := os.Stat(p.limitsFile)
	if err == nil {
		if info.ModTime().Equal(p.limMod) {
			return
		}
		b, err := fsx.ReadFile(p.limitsFile, 4096)
		if err != nil {
			return
		}
		var f limitsFile
		if json.Unmarshal(b, &f) != nil {
			return
		}
		next = f.limits().over(p.base)
		p.limMod = info.ModTime()
	} else if p.limMod.IsZero() {
		return
	} else {
		p.limMod = time.Time{}
	}
	cur := p.limits()
	if next == cur {
		return
	}
	p.lim.Store(&next)
	p.conns.setMax(next.MaxConns)
	if (next.HeaderTimeout != cur.HeaderTimeout || next.IdleTimeout != cur.IdleTimeout) && p.gen.Load() != nil {
		p.genMu.Lock()
		g := p.newGeneration(next)
		old := p.gen.Swap(g)
		old.retire()
		p.old = append(p.old, old)
		p.genMu.Unlock()
		go p.serve(p.ln, g, p.errc)
	}
	p.dirty.Store(true)
}

// limitsFile is the JSON of a limits file; absent fields keep the limits
// the proxy was started with.
type limitsFile struct {
	MaxBody        int64  `json:"max_body,omitempty"`
	MaxBuffered    int64  `json:"max_buffered,omitempty"`
	MaxConnections int    `json:"max_connections,omitempty"`
	HeaderTimeout  string `json:"header_timeout,omitempty"`
	BodyTimeout    string `json:"body_timeout,omitempty"`
	IdleTimeout    string `json:"idle_timeout,omitempty"`
}

func (f limitsFile) limits() Limits {
	d := func(s string) time.Duration { v, _ := time.ParseDuration(s); return v }
	return Limits{MaxBody: f.MaxBody, MaxBuffered: f.MaxBuffered, MaxConns: f.MaxConnections,
		HeaderTimeout: d(f.HeaderTimeout), BodyTimeout: d(f.BodyTimeout), IdleTimeout: d(f.IdleTimeout)}
}

// over fills l's zero fields from base.
func (l Limits) over(base Limits) Limits {
	if l.MaxBody <= 0 {
		l.MaxBody = base.MaxBody
	}
	if l.MaxBuffered <= 0 {
		l.MaxBuffered = base.MaxBuffered
	}
	if l.MaxConns <= 0 {
		l.MaxConns = base.MaxConns
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = base.HeaderTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = base.BodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = base.IdleTimeout
	}
	return l
}

func (l Limits) file() *limitsFile {
	return &limitsFile{MaxBody: l.MaxBody, MaxBuffered: l.MaxBuffered, MaxConnections: l.MaxConns,
		HeaderTimeout: l.HeaderTimeout.String(), BodyTimeout: l.BodyTimeout.String(), IdleTimeout: l.IdleTimeout.String()}
}

// Reports reports whether the status shows the limits l (zero fields: the
// defaults) in force.
func (st *Status) Reports(l Limits) bool {
	return st != nil && st.Limits != nil && *st.Limits == *l.withDefaults().file()
}

// WriteLimits writes the limits file a running proxy takes its limits from
// (zero fields: the defaults); it follows within 100 ms and reports them in
// its status file.
func WriteLimits(path string, l Limits) error {
	b, _ := json.Marshal(l.withDefaults().file())
	if err := fsx.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	now := time.Now()
	_ = os.Chtimes(path, now, now)
	return nil
}

// connLimit counts open connections against a maximum that can change.
type connLimit struct {
	mu   sync.Mutex
	cond *sync.Cond
	n    int
	max  int
}

func (c *connLimit) setMax(n int) {
	c.mu.Lock()
	if c.cond == nil {
		c.cond = sync.NewCond(&c.mu)
	}
	c.max = n
	c.mu.Unlock()
	c.cond.Broadcast()
}

func (c *connLimit) acquire() {
	c.mu.Lock()
	if c.cond == nil {
		c.cond = sync.NewCond(&c.mu)
	}
	for c.max > 0 && c.n >= c.max {
		c.cond.Wait()
	}
	c.n++
	c.mu.Unlock()
}

func (c *connLimit) release() {
	c.mu.Lock()
	c.n--
	c.mu.Unlock()
	c.cond.Signal()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
