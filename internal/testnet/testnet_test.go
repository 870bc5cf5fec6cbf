package testnet

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortIsBindableAndInRange(t *testing.T) {
	for range 20 {
		p := FreePort(t)
		if p < Range[0] || p > Range[1] {
			t.Fatalf("port %d outside %v", p, Range)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d not bindable: %v", p, err)
		}
		ln.Close()
	}
}

func TestHeldPortIsNotFree(t *testing.T) {
	p := FreePort(t)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if free(p) {
		t.Fatalf("port %d reported free while held", p)
	}
}
