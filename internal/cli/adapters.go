package cli

import (
	"context"
	"net/http"
	"time"

	"github.com/roofline/roofline/internal/apply"
	"github.com/roofline/roofline/internal/driver"
	"github.com/roofline/roofline/internal/plan"
	"github.com/roofline/roofline/internal/proxy"
	"github.com/roofline/roofline/internal/state"
)

// newObserver is refresh's observer of this host (plan.LiveObserver): the
// driver set, a GET /health with a 2 s timeout, the proxies' target files
// in stateDir ("" for none) and the engines' logs.
func newObserver(drivers *driver.Set, stateDir string) *plan.LiveObserver {
	client := &http.Client{Timeout: 2 * time.Second}
	o := &plan.LiveObserver{
		Instances: driverInstances{drivers},
		Health: func(ctx context.Context, url string) (int, error) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		},
		LastLogLine: func(path string) string {
			if tail := apply.LastLines(path, 1); len(tail) > 0 {
				return tail[0]
			}
			return ""
		},
	}
	if stateDir != "" {
		o.ProxyBackend = func(name string) int { return proxy.BackendPort(stateDir, name) }
	}
	return o
}

// driverInstances adapts the driver set to plan.Instances.
type driverInstances struct{ set *driver.Set }

func (d driverInstances) Read(ctx context.Context, i state.Instance) (bool, string, []int, error) {
	obs, err := d.set.Read(ctx, i)
	if err != nil {
		return false, "", nil, err
	}
	return obs.Alive, obs.Detail, obs.PIDs, nil
}

func (d driverInstances) Find(ctx context.Context, name, launchID string) ([]state.Instance, error) {
	drv, err := d.set.In(name)
	if err != nil {
		return nil, err
	}
	return drv.Find(ctx, launchID)
}
