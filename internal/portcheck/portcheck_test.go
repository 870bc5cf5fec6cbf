package portcheck

import (
	"net"
	"os"
	"strings"
	"testing"
)

func TestHolder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	held, who := Holder("127.0.0.1", port)
	if !held {
		t.Fatal("a listening port must be held")
	}
	// The owner is this test process.
	if want := "pid " + itoa(os.Getpid()); !strings.HasPrefix(who, want) {
		t.Errorf("who = %q, want prefix %q", who, want)
	}
	ln.Close()
	if held, who := Holder("127.0.0.1", port); held {
		t.Errorf("a closed port is reported held by %s", who)
	}
}

func itoa(i int) string {
	b := []byte{}
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}
