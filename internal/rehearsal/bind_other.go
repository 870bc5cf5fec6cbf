//go:build !linux

package rehearsal

import (
	"net"
	"strconv"
	"syscall"
)

// boundSocket: outside Linux the bind-before-listen of vLLM is approximated
// by listening at once.
type boundSocket struct{ ln net.Listener }

func bindSocket(host string, port int) (*boundSocket, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	return &boundSocket{ln: ln}, nil
}

func (b *boundSocket) listen() (net.Listener, error) { return b.ln, nil }

func (b *boundSocket) close() { _ = b.ln.Close() }

func workerAttr() *syscall.SysProcAttr { return nil }
