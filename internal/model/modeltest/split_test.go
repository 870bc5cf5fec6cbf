package modeltest

import "testing"

// The benchmark layout: full DeepSeek-V3 cut into 163 shards, none empty, in
// model order, of about equal size.
func TestSplitDeepSeek163(t *testing.T) {
	ts := DeepSeekV3.Tensors()
	groups := split(ts, 163)
	var total, biggest int64
	n := 0
	for i, g := range groups {
		if len(g) == 0 {
			t.Fatalf("shard %d is empty", i)
		}
		var b int64
		for _, x := range g {
			if x.Name != ts[n].Name {
				t.Fatalf("shard %d breaks model order at %s", i, x.Name)
			}
			n++
			b += x.Bytes()
		}
		total += b
		biggest = max(biggest, b)
	}
	if n != len(ts) || biggest > 2*total/163 {
		t.Errorf("%d of %d tensors placed, biggest shard %d of %d", n, len(ts), biggest, total)
	}
}
