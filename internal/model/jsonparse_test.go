package model

import (
	"math/rand/v2"
	"testing"
)

// hasCtlBytes (eight bytes at a time) agrees with a byte-by-byte scan.
func TestHasCtlBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 2000; n++ {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0xe0))
		}
		if len(b) > 0 && r.IntN(2) == 0 {
			b[r.IntN(len(b))] = byte(r.IntN(0x20))
		}
		if got, want := hasCtlBytes(b), hasCtl(string(b)); got != want {
			t.Fatalf("%q: got %v, want %v", b, got, want)
		}
	}
}
