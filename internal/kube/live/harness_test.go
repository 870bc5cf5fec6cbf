package live

import (
	"os"
	"testing"

	"github.com/roofline/roofline/internal/kube/kubetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.Stop()
	os.Exit(code)
}
