// Package kubetest runs a Kubernetes control plane for tests
// (docs/kubernetes.md): envtest's etcd and kube-apiserver with the
// LeaderWorkerSet CRD, kube-controller-manager, kube-scheduler and kwok, all
// built by .ci/k8s.sh, on loopback. One per test binary: Get starts it,
// Stop (from TestMain) ends it.
package kubetest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The cluster the tests run against: etcd and kube-apiserver (envtest),
// kube-controller-manager (Deployments get ReplicaSets and pods, garbage
// collection), kube-scheduler (pods get nodes, counting nvidia.com/gpu) and
// kwok (fake nodes go Ready, their pods Running and Ready), all built by
// .ci/k8s.sh. No kubelet, no GPU, no container runtime; loopback only.
type Cluster struct {
	env        *envtest.Environment
	RC         *rest.Config
	Kubeconfig string
	Typed      kubernetes.Interface
	procs      []*exec.Cmd
	Logs       map[string]*bytes.Buffer
	crdDir     string
	// controllers: kube-controller-manager and kube-scheduler run, so that
	// Deployments get pods and pods get nodes. Plan-only tests do without.
	Controllers bool
}

// RequireControllers skips (or, under ROOFLINE_K8S_REQUIRED=1, fails) a
// test that needs pods to be created and scheduled.
func (tc *Cluster) RequireControllers(t testing.TB) {
	t.Helper()
	if tc.Controllers {
		return
	}
	msg := howToRun + " (kube-controller-manager and kube-scheduler are missing)"
	if os.Getenv("ROOFLINE_K8S_REQUIRED") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

var (
	clusterOnce sync.Once
	shared      *Cluster
	sharedErr   error
	skipReason  string
)

const howToRun = "the Kubernetes test binaries are not built: run `bash .ci/k8s.sh` (about 10 minutes of CPU once; cached in ~/.cache/roofline-k8s), then go test again"

// assets finds the binaries: KUBEBUILDER_ASSETS, ROOFLINE_KWOK,
// ROOFLINE_KWOK_STAGES, ROOFLINE_LWS_CRDS as .ci/k8s.sh -env prints them,
// else its default cache.
func assets() (bin, kwok, stages, crds string, missing []string) {
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".cache", "roofline-k8s")
	pick := func(env, def string) string {
		if v := os.Getenv(env); v != "" {
			return v
		}
		return def
	}
	bin = pick("KUBEBUILDER_ASSETS", filepath.Join(cache, "bin"))
	kwok = pick("ROOFLINE_KWOK", filepath.Join(bin, "kwok"))
	stages = pick("ROOFLINE_KWOK_STAGES", filepath.Join(cache, "kwok-stages.yaml"))
	crds = os.Getenv("ROOFLINE_LWS_CRDS")
	if crds == "" {
		if out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/lws").Output(); err == nil {
			crds = filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases")
		}
	}
	for _, f := range []string{filepath.Join(bin, "etcd"), filepath.Join(bin, "kube-apiserver"), kwok, stages, crds} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	return
}

// Get returns the package's cluster, starting it on first use; it
// skips the test (fails it under ROOFLINE_K8S_REQUIRED=1) when the
// binaries are absent.
func Get(t testing.TB) *Cluster {
	t.Helper()
	clusterOnce.Do(func() {
		bin, kwok, stages, crds, missing := assets()
		if len(missing) > 0 {
			skipReason = howToRun + " (missing: " + strings.Join(missing, ", ") + ")"
			return
		}
		shared, sharedErr = startCluster(bin, kwok, stages, crds)
	})
	if skipReason != "" {
		if os.Getenv("ROOFLINE_K8S_REQUIRED") == "1" {
			t.Fatalf("ROOFLINE_K8S_REQUIRED=1 but %s", skipReason)
		}
		t.Skip(skipReason)
	}
	if sharedErr != nil {
		t.Fatalf("starting the test cluster: %v", sharedErr)
	}
	return shared
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startCluster(bin, kwok, stages, crds string) (*Cluster, error) {
	tc := &Cluster{Logs: map[string]*bytes.Buffer{}, crdDir: crds}
	tc.env = &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		CRDDirectoryPaths:        []string{crds},
		ErrorIfCRDPathMissing:    true,
		CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: 3 * time.Minute, PollInterval: 200 * time.Millisecond},
		ControlPlaneStartTimeout: 3 * time.Minute, // a loaded 2-core machine
		ControlPlaneStopTimeout:  2 * time.Minute,
	}
	rc, err := tc.env.Start()
	if err != nil {
		_ = tc.env.Stop() // a start that timed out can leave etcd and the apiserver running
		return nil, err
	}
	tc.RC = rc
	fail := func(err error) (*Cluster, error) {
		tc.stop()
		return nil, err
	}
	user, err := tc.env.AddUser(envtest.User{Name: "roofline-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fail(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "roofline-kube-")
	if err != nil {
		return fail(err)
	}
	tc.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(tc.Kubeconfig, kc, 0o600); err != nil {
		return fail(err)
	}
	if tc.Typed, err = kubernetes.NewForConfig(rc); err != nil {
		return fail(err)
	}
	cmPort, err1 := freePort()
	schedPort, err2 := freePort()
	if err1 != nil || err2 != nil {
		return fail(fmt.Errorf("no free port: %v %v", err1, err2))
	}
	_, err1 = os.Stat(filepath.Join(bin, "kube-controller-manager"))
	_, err2 = os.Stat(filepath.Join(bin, "kube-scheduler"))
	tc.Controllers = err1 == nil && err2 == nil
	for _, p := range []struct {
		name string
		argv []string
	}{
		{"kube-controller-manager", []string{filepath.Join(bin, "kube-controller-manager"), "--kubeconfig=" + tc.Kubeconfig,
			"--controllers=deployment-controller,replicaset-controller,statefulset-controller,garbage-collector-controller",
			"--leader-elect=false", "--use-service-account-credentials=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(cmPort),
			"--concurrent-deployment-syncs=5", "--concurrent-replicaset-syncs=5"}},
		{"kube-scheduler", []string{filepath.Join(bin, "kube-scheduler"), "--kubeconfig=" + tc.Kubeconfig,
			"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(schedPort)}},
		{"kwok", []string{kwok, "--kubeconfig=" + tc.Kubeconfig, "--config=" + stages,
			"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--cidr=127.64.0.0/16", "--node-ip=127.0.0.9"}},
	} {
		if p.name != "kwok" && !tc.Controllers {
			continue
		}
		cmd := exec.Command(p.argv[0], p.argv[1:]...)
		dieWithParent(cmd)
		buf := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = buf, buf
		if err := cmd.Start(); err != nil {
			return fail(fmt.Errorf("starting %s: %w", p.name, err))
		}
		tc.procs = append(tc.procs, cmd)
		tc.Logs[p.name] = buf
	}
	return tc, nil
}

func (tc *Cluster) stop() {
	for _, p := range tc.procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
	if tc.Kubeconfig != "" {
		_ = os.RemoveAll(filepath.Dir(tc.Kubeconfig))
	}
	_ = tc.env.Stop()
}

// Stop ends the cluster Get started, if any: call it from TestMain after
// m.Run.
func Stop() {
	if shared != nil {
		shared.stop()
	}
}

// Namespace creates a fresh namespace for one test.
func (tc *Cluster) Namespace(t testing.TB, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := tc.Typed.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// GPUNode describes a fake GPU node: GFD labels for an H100 80GB HBM3.
type GPUNode struct {
	Name string
	GPUs int64
	Pool string // roofline.test/pool label, which the tests' node selector picks
	Kwok bool   // managed by kwok (Ready, heartbeats, pods go Ready)
}

func H100Labels(pool string, gpus int64) map[string]string {
	return map[string]string{
		"roofline.test/pool":           pool,
		"nvidia.com/gpu.product":       "NVIDIA-H100-80GB-HBM3",
		"nvidia.com/gpu.memory":        "81559",
		"nvidia.com/gpu.count":         strconv.FormatInt(gpus, 10),
		"nvidia.com/gpu.compute.major": "9",
		"nvidia.com/gpu.compute.minor": "0",
		"kubernetes.io/os":             "linux",
	}
}

// AddNodes creates fake GPU nodes and waits until they are Ready. kwok
// v0.8.0 can crash when the first node and pod arrive together, so pods
// come only after this. Nodes not managed by kwok get a Ready status
// written once (enough for plan, which schedules nothing).
func (tc *Cluster) AddNodes(t testing.TB, nodes ...GPUNode) {
	t.Helper()
	ctx := context.Background()
	for _, n := range nodes {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: H100Labels(n.Pool, n.GPUs)},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n.GPUs, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("1Ti"), corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n.GPUs, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("1Ti"), corev1.ResourcePods: resource.MustParse("110")},
			},
		}
		node.Labels["kubernetes.io/hostname"] = n.Name
		if n.Kwok {
			node.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
		}
		created, err := tc.Typed.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !n.Kwok {
			created.Status = node.Status
			created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Fake", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			if _, err := tc.Typed.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, n := range nodes {
		for {
			node, err := tc.Typed.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err == nil && nodeReady(node) {
				// The API server taints a new node not-ready; the node
				// lifecycle controller, which these tests do not run (it
				// would fail static nodes without heartbeats), lifts it.
				if len(node.Spec.Taints) > 0 {
					node.Spec.Taints = nil
					if _, err := tc.Typed.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
						continue // a conflict with kwok's heartbeat: read it again
					}
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s not Ready after 2 minutes; kwok's log:\n%s", n.Name, tc.Logs["kwok"])
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func Quantity(n int64) resource.Quantity { return *resource.NewQuantity(n, resource.DecimalSI) }
