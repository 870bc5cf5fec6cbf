//go:build linux

package rehearsal

import (
	"net"
	"os"
	"syscall"
)

// boundSocket is vLLM's server socket: bound before the engine loads (with
// SO_REUSEADDR and SO_REUSEPORT, as create_server_socket does) but not
// listening, so connections are refused until the engine is ready.
type boundSocket struct{ fd int }

func bindSocket(host string, port int) (*boundSocket, error) {
	ip := net.ParseIP(host)
	if host == "" || host == "0.0.0.0" {
		ip = net.IPv4zero
	}
	if ip == nil {
		addrs, err := net.LookupIP(host)
		if err != nil || len(addrs) == 0 {
			return nil, &net.AddrError{Err: "cannot resolve host", Addr: host}
		}
		ip = addrs[0]
	}
	family := syscall.AF_INET
	if ip.To4() == nil {
		family = syscall.AF_INET6
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, 0xf /* SO_REUSEPORT */, 1)
	var sa syscall.Sockaddr
	if family == syscall.AF_INET {
		a := &syscall.SockaddrInet4{Port: port}
		copy(a.Addr[:], ip.To4())
		sa = a
	} else {
		a := &syscall.SockaddrInet6{Port: port}
		copy(a.Addr[:], ip.To16())
		sa = a
	}
	if err := syscall.Bind(fd, sa); err != nil {
		_ = syscall.Close(fd)
		return nil, err
	}
	return &boundSocket{fd: fd}, nil
}

// listen starts listening on the bound socket.
func (b *boundSocket) listen() (net.Listener, error) {
	if err := syscall.Listen(b.fd, 2048); err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(b.fd), "vllm-server-socket")
	b.fd = -1 // f owns it now: closing it again later could close another file that took its number
	defer f.Close()
	return net.FileListener(f)
}

func (b *boundSocket) close() {
	if b.fd >= 0 {
		_ = syscall.Close(b.fd)
		b.fd = -1
	}
}

// workerAttr makes the worker die with its parent (the pipe watch is the
// second line of defence: Pdeathsig follows the spawning thread).
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
