package cli

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/roofline/roofline/internal/kube/kubetest"
)

// TestMain refuses to run the tests when this test binary is started as
// roofline itself: commands under test copy os.Executable() to run the
// rehearsal engine and proxies, and in a test that is cli.test. Run with
// "rehearsal vllm@…" it would run the whole suite again, which starts more
// copies of itself: a fork bomb. go test passes only flags (-test.*, -update).
func TestMain(m *testing.M) {
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "-") {
			fmt.Fprintf(os.Stderr, "cli.test was run as roofline (%q): a test let a command start roofline's own executable\n", strings.Join(os.Args[1:], " "))
			os.Exit(3)
		}
	}
	code := m.Run()
	kubetest.Stop() // the Kubernetes test cluster, when a test started it
	os.Exit(code)
}
