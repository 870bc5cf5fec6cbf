package live

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/gate"
	"github.com/roofline/roofline/internal/kube"
	"github.com/roofline/roofline/internal/kube/kubetest"
	"github.com/roofline/roofline/internal/model"
	"github.com/roofline/roofline/internal/model/modeltest"
	"github.com/roofline/roofline/internal/rehearsal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

const image = "vllm/vllm-openai@sha256:1111111111111111111111111111111111111111111111111111111111111111"

// fixture is one configuration of the e2e test.
type fixture struct {
	kubeconfig, ns, pool, root string
	maxModelLen                int
	replicas                   int
	cbd                        bool
	filler                     bool // a second server taking 2 × 4 GPUs
}

func (f fixture) hcl() string {
	lc := ""
	if f.cbd {
		lc = "lifecycle {\n    create_before_destroy = true\n  }"
	}
	s := fmt.Sprintf(`
cluster "lab" {
  kubeconfig    = %q
  namespace     = %q
  node_selector = { "roofline.test/pool" = %q }
  model_volume {
    host_path = %q
  }
}

engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  image   = %q
}

model "qwen" {
  path = "%s/qwen3_8b"
}

server "chat" {
  cluster         = cluster.lab
  engine          = engine.vllm
  model           = model.qwen
  port            = 8000
  replicas        = %d
  tensor_parallel = 4
  max_model_len   = %d
  %s
}
`, f.kubeconfig, f.ns, f.pool, f.root, image, f.root, f.replicas, f.maxModelLen, lc)
	if f.filler {
		s += `
server "filler" {
  cluster         = cluster.lab
  engine          = engine.vllm
  model           = model.qwen
  port            = 8001
  replicas        = 2
  tensor_parallel = 4
}
`
	}
	return s
}

// specsOf loads HCL and returns its cluster servers' specs and the cluster.
func specsOf(t testing.TB, src string) ([]kube.Spec, *config.Cluster) {
	t.Helper()
	cfg, diags := config.Load("/cfg", []string{"main.hcl"}, map[string][]byte{"main.hcl": []byte(src)})
	if diags.HasErrors() {
		t.Fatalf("config: %v", diags)
	}
	var specs []kube.Spec
	var cl *config.Cluster
	for _, name := range cfg.ClusterServers() {
		s := cfg.Servers[name]
		cl = cfg.Clusters[s.Cluster]
		specs = append(specs, kube.Spec{Server: s, Model: cfg.Models[s.Model], Engine: cfg.Engines[s.Engine], Cluster: cl})
	}
	return specs, cl
}

// clientFor builds the client the way the CLI does: from the cluster
// block's kubeconfig.
func clientFor(t testing.TB, cl *config.Cluster) *Client {
	t.Helper()
	rc, err := RESTConfig(cl)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(rc, cl.Name, cl.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func planOf(t testing.TB, src string, destroy bool) (*Plan, *Client) {
	t.Helper()
	specs, cl := specsOf(t, src)
	c := clientFor(t, cl)
	p := c.Plan(context.Background(), specs, destroy, &Preflight{Inspect: model.Inspect})
	return p, c
}

func noErrors(t testing.TB, p *Plan) {
	t.Helper()
	if p.Diags.HasErrors() {
		t.Fatalf("plan has errors: %v\n%s", p.Diags, Human(p))
	}
}

// rehearsalResolver is the test seam of the gates: kwok's pods serve no
// HTTP, so every Service resolves to a local rehearsal engine (the same
// emulation roofline's host tests use), on loopback.
type rehearsalResolver struct {
	srv      *httptest.Server
	resolved []string
}

func newRehearsal(t testing.TB, state rehearsal.State) *rehearsalResolver {
	h := rehearsal.NewHandler(rehearsal.ServeOptions{ServedNames: []string{"qwen"}, MaxModelLen: 4096, Metrics: true})
	h.SetState(state)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &rehearsalResolver{srv: srv}
}

func (r *rehearsalResolver) Resolve(_ context.Context, svc *corev1.Service) (string, func(), error) {
	r.resolved = append(r.resolved, svc.Name)
	return r.srv.URL, func() {}, nil
}

func healthGate(ctx context.Context, addr, base string) error {
	_, err := gate.Health(ctx, gate.NewClient(2), gate.Target{BaseURL: base, Model: "qwen", Engine: "vllm"})
	return err
}

func applier(t testing.TB, c *Client, res Resolver) *Applier {
	return &Applier{Client: c, Gate: healthGate, Resolve: res, Poll: 200 * time.Millisecond,
		Progress: func(format string, args ...any) { t.Logf("apply: "+format, args...) }}
}

func serviceHash(t testing.TB, c *Client, name string) string {
	t.Helper()
	svc, err := c.Typed.CoreV1().Services(c.Namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.Selector[kube.LabelConfigHash]
}

func writeModel(t testing.TB) string {
	root := t.TempDir()
	if err := modeltest.Write(filepath.Join(root, "qwen3_8b"), modeltest.Qwen3_8B); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestClusterE2E walks one server through its life on envtest + kwok with
// two fake nodes of 8 H100 80GB each: plan from an empty namespace, apply
// and readiness, an empty second plan, a blue/green replacement with its
// argv diff, a failed gate, a rollout that cannot surge, a hand edit as
// drift, and destroy.
func TestClusterE2E(t *testing.T) {
	tc := kubetest.Get(t)
	tc.RequireControllers(t)
	ctx := context.Background()
	tc.AddNodes(t, kubetest.GPUNode{Name: "gpu-a", GPUs: 8, Pool: "e2e", Kwok: true}, kubetest.GPUNode{Name: "gpu-b", GPUs: 8, Pool: "e2e", Kwok: true})
	f := fixture{kubeconfig: tc.Kubeconfig, ns: tc.Namespace(t, "e2e"), pool: "e2e", root: writeModel(t), maxModelLen: 8192, replicas: 2, cbd: true}
	res := newRehearsal(t, rehearsal.StateReady)

	// 1. Plan from an empty namespace: every object is created.
	p, c := planOf(t, f.hcl(), false)
	noErrors(t, p)
	sp := p.Server("server.chat")
	if sp == nil || sp.Action != Create {
		t.Fatalf("first plan:\n%s", Human(p))
	}
	var kinds []string
	for _, o := range sp.Objects {
		kinds = append(kinds, string(o.Action)+" "+o.Kind)
	}
	if want := []string{"create Deployment", "create Service", "create Service"}; !slices.Equal(kinds, want) {
		t.Errorf("objects %v, want %v", kinds, want)
	}
	if !strings.Contains(sp.Objects[0].Diff, "nvidia.com/gpu: \"4\"") || !strings.Contains(sp.Objects[0].Diff, "+  replicas: 2") {
		t.Errorf("the Deployment's planned YAML lacks its GPUs or replicas:\n%s", sp.Objects[0].Diff)
	}
	text := Human(p)
	for _, want := range []string{"# server.chat will be created on cluster.lab", "+ Deployment chat-" + sp.Rendered.Hash, "Plan: 1 to add, 0 to change, 0 to destroy."} {
		if !strings.Contains(text, want) {
			t.Errorf("human plan lacks %q:\n%s", want, text)
		}
	}

	// 2. Apply: the scheduler binds the pods to the fake GPU nodes, kwok
	// makes them Ready, the gates pass through the generation's Service.
	if err := applier(t, c, res).Apply(ctx, p); err != nil {
		t.Fatalf("apply: %v\nkube-controller-manager:\n%s", err, tail(tc.Logs["kube-controller-manager"]))
	}
	gen1 := sp.Rendered.Hash
	if h := serviceHash(t, c, "chat"); h != gen1 {
		t.Errorf("Service selects %q, want %q", h, gen1)
	}
	if !slices.Contains(res.resolved, "chat-"+gen1) {
		t.Errorf("the gates went through %v, want the generation Service chat-%s", res.resolved, gen1)
	}
	pods, _ := c.podsOf(ctx, "chat", gen1)
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s on %q is %s", pod.Name, pod.Spec.NodeName, pod.Status.Phase)
		}
	}

	// 3. A second plan is empty.
	p, _ = planOf(t, f.hcl(), false)
	noErrors(t, p)
	if p.HasChanges() || len(p.Drift) > 0 {
		t.Fatalf("second plan is not empty:\n%s", Human(p))
	}
	if !strings.Contains(Human(p), "No changes.") {
		t.Errorf("second plan:\n%s", Human(p))
	}

	// 4. max_model_len changes: a blue/green replacement with its argv diff.
	f.maxModelLen = 16384
	p, c = planOf(t, f.hcl(), false)
	noErrors(t, p)
	sp = p.Server("server.chat")
	if sp.Action != CreateThenDelete || sp.Old != "chat-"+gen1 {
		t.Fatalf("max_model_len change:\n%s", Human(p))
	}
	if !strings.Contains(sp.ArgvDiff, "-8192") || !strings.Contains(sp.ArgvDiff, "+16384") {
		t.Errorf("argv diff:\n%s", sp.ArgvDiff)
	}
	// A gate that fails deletes the new generation and leaves the Service.
	dead := newRehearsal(t, rehearsal.StateDead)
	err := applier(t, c, dead).Apply(ctx, p)
	if err == nil || !strings.Contains(err.Error(), "gate failed") || !strings.Contains(err.Error(), "keeps serving") {
		t.Fatalf("apply with a failing gate: %v", err)
	}
	if h := serviceHash(t, c, "chat"); h != gen1 {
		t.Errorf("after the failed gate the Service selects %q, want the old %q", h, gen1)
	}
	if _, err := c.Dynamic.Resource(deployments).Namespace(c.Namespace).Get(ctx, "chat-"+sp.Rendered.Hash, metav1.GetOptions{}); err == nil {
		t.Errorf("the failed generation chat-%s is still there", sp.Rendered.Hash)
	}
	// With a passing gate the Service switches and the old generation goes.
	p, c = planOf(t, f.hcl(), false)
	noErrors(t, p)
	if err := applier(t, c, res).Apply(ctx, p); err != nil {
		t.Fatalf("blue/green apply: %v", err)
	}
	gen2 := p.Server("server.chat").Rendered.Hash
	if h := serviceHash(t, c, "chat"); h != gen2 {
		t.Errorf("Service selects %q after the switch, want %q", h, gen2)
	}
	if old, _ := c.podsOf(ctx, "chat", gen1); len(old) != 0 {
		// Foreground deletion: the pods go with their Deployment (kwok's
		// pod-delete stage finishes them).
		waitGone(t, c, "chat", gen1)
	}

	// 5. The nodes are full (chat 8 GPUs + filler 8 GPUs): another change
	// cannot surge. Under create_before_destroy that is a plan error; without
	// it, a destroy-first replacement with its downtime.
	f.filler = true
	p, c = planOf(t, f.hcl(), false)
	noErrors(t, p)
	if err := applier(t, c, res).Apply(ctx, p); err != nil {
		t.Fatalf("apply filler: %v", err)
	}
	f.maxModelLen = 4096
	p, _ = planOf(t, f.hcl(), false)
	if !hasDiag(p, "Cannot surge: not enough free GPUs") {
		t.Errorf("full nodes, create_before_destroy: want a surge error:\n%v\n%s", p.Diags, Human(p))
	}
	f.cbd = false
	p, _ = planOf(t, f.hcl(), false)
	noErrors(t, p)
	if sp = p.Server("server.chat"); sp.Action != DeleteThenCreate || sp.Downtime == "" {
		t.Errorf("full nodes, destroy-first: %s, downtime %q", sp.Action, sp.Downtime)
	}
	f.cbd, f.maxModelLen = true, 16384 // back to what runs

	// 6. A hand edit (kubectl edit's manager) is drift that plan takes back.
	dep := "chat-" + gen2
	patch := []byte(`{"spec":{"replicas":1}}`)
	if _, err := c.Dynamic.Resource(deployments).Namespace(c.Namespace).Patch(ctx, dep, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	p, c = planOf(t, f.hcl(), false)
	noErrors(t, p)
	if len(p.Drift) == 0 || !strings.Contains(p.Drift[0].Summary, "edited by hand") {
		t.Errorf("hand edit: want drift, got %v\n%s", p.Drift, Human(p))
	}
	sp = p.Server("server.chat")
	if sp.Action != Update || !sp.Objects[0].Force || !strings.Contains(sp.Objects[0].Diff, "+  replicas: 2") {
		t.Errorf("hand edit: want an update taking replicas back:\n%s", Human(p))
	}
	if err := applier(t, c, res).Apply(ctx, p); err != nil {
		t.Fatalf("apply after the hand edit: %v", err)
	}
	if p, _ = planOf(t, f.hcl(), false); p.HasChanges() {
		t.Errorf("after taking the edit back the plan is not empty:\n%s", Human(p))
	}

	// 7. destroy leaves nothing with roofline's labels.
	p, c = planOf(t, f.hcl(), true)
	if err := applier(t, c, res).Destroy(ctx, p); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	waitGone(t, c, "", "")
	if left, err := c.Leftovers(ctx); err != nil || len(left) > 0 {
		t.Errorf("after destroy: %v %v", left, err)
	}
}

func hasDiag(p *Plan, summary string) bool {
	for _, d := range p.Diags {
		if d.Summary == summary {
			return true
		}
	}
	return false
}

func waitGone(t testing.TB, c *Client, server, hash string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		pods, err := c.podsOf(context.Background(), server, hash)
		if err == nil && len(pods) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods of %s/%s still there after a minute: %d", server, hash, len(pods))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(b fmt.Stringer) string {
	s := b.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// TestMultiNodePlan: a TP 8 × PP 2 server renders a LeaderWorkerSet that
// the API server accepts (CRD schema, defaults) for vLLM and for SGLang.
func TestMultiNodePlan(t *testing.T) {
	tc := kubetest.Get(t)
	tc.AddNodes(t, kubetest.GPUNode{Name: "mn-a", GPUs: 8, Pool: "multinode"}, kubetest.GPUNode{Name: "mn-b", GPUs: 8, Pool: "multinode"})
	ns := tc.Namespace(t, "multinode")
	root := writeModel(t)
	src := fmt.Sprintf(`
cluster "lab" {
  kubeconfig    = %q
  namespace     = %q
  node_selector = { "roofline.test/pool" = "multinode" }
  model_volume {
    host_path = %q
  }
}
engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  image   = %q
}
engine "sglang" {
  kind    = "sglang"
  version = "0.5.6.post2"
  image   = "lmsysorg/sglang@sha256:2222222222222222222222222222222222222222222222222222222222222222"
}
model "qwen" {
  path = "%s/qwen3_8b"
}
server "big_vllm" {
  cluster           = cluster.lab
  engine            = engine.vllm
  model             = model.qwen
  port              = 8000
  nodes             = 2
  tensor_parallel   = 8
  pipeline_parallel = 2
}
server "big_sglang" {
  cluster           = cluster.lab
  engine            = engine.sglang
  model             = model.qwen
  port              = 30000
  nodes             = 2
  tensor_parallel   = 8
  pipeline_parallel = 2
}
`, tc.Kubeconfig, ns, root, image, root)
	specs, cl := specsOf(t, src)
	c := clientFor(t, cl)
	// Each server alone fits the two nodes; together they do not.
	for _, spec := range specs {
		p := c.Plan(context.Background(), []kube.Spec{spec}, false, &Preflight{Inspect: model.Inspect})
		noErrors(t, p)
		sp := p.Servers[0]
		w := sp.Objects[0]
		if sp.Action != Create || w.Kind != "LeaderWorkerSet" {
			t.Fatalf("%s:\n%s", spec.Server.Name, Human(p))
		}
		// The dry run went through the CRD: its defaults are in the plan.
		if !strings.Contains(w.Diff, "+      partition: 0") {
			t.Errorf("%s: the dry run's CRD defaults are missing:\n%s", spec.Server.Name, w.Diff)
		}
		flags := map[string][]string{
			"big_vllm":   {"--nnodes", "--master-addr", "$(LWS_LEADER_ADDRESS)", "--node-rank", "$(LWS_WORKER_INDEX)", "--headless", "RecreateGroupOnPodRestart"},
			"big_sglang": {"--nnodes", "--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000", "--node-rank", "$(LWS_WORKER_INDEX)", "RecreateGroupOnPodRestart"},
		}[spec.Server.Name]
		for _, fl := range flags {
			if !strings.Contains(w.Diff, fl) {
				t.Errorf("%s: planned LWS lacks %s", spec.Server.Name, fl)
			}
		}
	}
	p := c.Plan(context.Background(), specs, false, &Preflight{Inspect: model.Inspect})
	if !hasDiag(p, "Not enough free GPUs") {
		t.Errorf("two 16-GPU servers on 16 GPUs: want a GPU error, got %v", p.Diags)
	}
}

// TestKubectlDiffAgrees: kubectl diff --server-side and roofline's plan see
// the same change of the same object.
func TestKubectlDiffAgrees(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	tc := kubetest.Get(t)
	tc.RequireControllers(t)
	ctx := context.Background()
	tc.AddNodes(t, kubetest.GPUNode{Name: "diff-a", GPUs: 8, Pool: "diff", Kwok: true})
	f := fixture{kubeconfig: tc.Kubeconfig, ns: tc.Namespace(t, "kubectl-diff"), pool: "diff", root: writeModel(t), maxModelLen: 8192, replicas: 1}
	p, c := planOf(t, f.hcl(), false)
	noErrors(t, p)
	if err := applier(t, c, newRehearsal(t, rehearsal.StateReady)).Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	f.replicas = 2
	p, _ = planOf(t, f.hcl(), false)
	noErrors(t, p)
	sp := p.Server("server.chat")
	if sp.Action != Update {
		t.Fatalf("replicas 1→2:\n%s", Human(p))
	}
	b, err := yaml.Marshal(sp.Rendered.Workload.Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "deployment.yaml")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "--kubeconfig", tc.Kubeconfig, "diff", "--server-side", "--field-manager=roofline", "-f", file).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("kubectl diff: %v (want exit 1: differences)\n%s", err, out)
	}
	ours, theirs := changedLines(sp.Objects[0].Diff), changedLines(string(out))
	if len(ours) == 0 || !slices.Equal(ours, theirs) {
		t.Errorf("roofline's plan and kubectl diff disagree:\nroofline: %q\nkubectl:  %q\nkubectl's output:\n%s", ours, theirs, out)
	}
	// And with nothing to change both say so.
	f.replicas = 1
	if p, _ = planOf(t, f.hcl(), false); p.HasChanges() {
		t.Errorf("replicas back to 1 plans changes:\n%s", Human(p))
	}
	b, _ = yaml.Marshal(p.Server("server.chat").Rendered.Workload.Object)
	_ = os.WriteFile(file, b, 0o600)
	if out, err := exec.Command(kubectl, "--kubeconfig", tc.Kubeconfig, "diff", "--server-side", "--field-manager=roofline", "-f", file).CombinedOutput(); err != nil {
		t.Errorf("kubectl diff of the unchanged object: %v\n%s", err, out)
	}
}

// changedLines are a unified diff's -/+ lines, without the headers and the
// fields roofline's plan leaves out (generation, managedFields).
func changedLines(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+++") || !(strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) {
			continue
		}
		if strings.Contains(l, "generation:") || strings.Contains(l, "managedFields") || strings.Contains(l, "time:") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// benchServers renders n servers of one replica × 4 GPUs.
func benchServers(tc *kubetest.Cluster, ns, root string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
cluster "lab" {
  kubeconfig    = %q
  namespace     = %q
  node_selector = { "roofline.test/pool" = "bench" }
  model_volume {
    host_path = %q
  }
}
engine "vllm" {
  kind    = "vllm"
  version = "0.16.0"
  image   = %q
}
model "qwen" {
  path = "%s/qwen3_8b"
}
`, tc.Kubeconfig, ns, root, image, root)
	for i := range n {
		fmt.Fprintf(&b, "server \"s%d\" {\n  cluster = cluster.lab\n  engine = engine.vllm\n  model = model.qwen\n  port = 8000\n  tensor_parallel = 4\n}\n", i)
	}
	return b.String()
}

// BenchmarkPlan plans servers against fake GPU nodes, each with a bound
// pod holding half its GPUs: nodes 25/50/100 × servers 1/4. Each plan
// lists nodes and pods once and dry-runs three objects per server, so its
// cost grows linearly in both.
func BenchmarkPlan(b *testing.B) {
	tc := kubetest.Get(b)
	ctx := context.Background()
	ns := tc.Namespace(b, "bench")
	podNS := tc.Namespace(b, "bench-pods")
	root := writeModel(b)
	have := 0
	for _, nodes := range []int{25, 50, 100} {
		var add []kubetest.GPUNode
		for i := have; i < nodes; i++ {
			add = append(add, kubetest.GPUNode{Name: fmt.Sprintf("bench-%03d", i), GPUs: 8, Pool: "bench"})
		}
		tc.AddNodes(b, add...)
		for i := have; i < nodes; i++ {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("busy-%03d", i), Namespace: podNS},
				Spec: corev1.PodSpec{NodeName: fmt.Sprintf("bench-%03d", i), Containers: []corev1.Container{{
					Name: "c", Image: "busy@sha256:" + strings.Repeat("3", 64),
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": kubetest.Quantity(4)}},
				}}},
			}
			if _, err := tc.Typed.CoreV1().Pods(podNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		have = nodes
		for _, servers := range []int{1, 4} {
			specs, cl := specsOf(b, benchServers(tc, ns, root, servers))
			c := clientFor(b, cl)
			pf := &Preflight{} // the VRAM fit reads a model folder: host cost, not cluster cost
			b.Run(fmt.Sprintf("nodes=%d/servers=%d", nodes, servers), func(b *testing.B) {
				for b.Loop() {
					p := c.Plan(ctx, specs, false, pf)
					if p.Diags.HasErrors() || len(p.Servers) != servers {
						b.Fatalf("plan: %v", p.Diags)
					}
				}
			})
		}
	}
}
