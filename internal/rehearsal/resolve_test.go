package rehearsal

import (
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/config"
)

func TestResolve(t *testing.T) {
	for _, tt := range []struct {
		e        *config.Engine
		want, id string
	}{
		{&config.Engine{Kind: "vllm", Version: "0.16.0", Rehearsal: true}, "/bin/roofline rehearsal vllm@0.16.0", "rehearsal:vllm@0.16.0"},
		{&config.Engine{Kind: "sglang", Version: "0.5.6.post2", Rehearsal: true}, "/bin/roofline rehearsal sglang@0.5.6.post2 -m sglang.launch_server", "rehearsal:sglang@0.5.6.post2"},
		{&config.Engine{Kind: "vllm", Command: []string{"/opt/v/bin/vllm"}}, "/opt/v/bin/vllm", ""},
	} {
		Resolve(tt.e, "/bin/roofline")
		Resolve(tt.e, "/other/roofline") // twice changes nothing
		if got := strings.Join(tt.e.Command, " "); got != tt.want || tt.e.PinnedIdentity != tt.id {
			t.Errorf("Resolve: command %q, identity %q; want %q, %q", got, tt.e.PinnedIdentity, tt.want, tt.id)
		}
	}
}
