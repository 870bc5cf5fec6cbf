// Package kube renders servers that run on a Kubernetes cluster into the
// objects that will exist there (docs/kubernetes.md): a Deployment and a
// Service for a server on one node, a LeaderWorkerSet and a Service for one
// that spans several. Rendering is pure: the same configuration always gives
// the same objects, which is what plan diffs against the cluster.
package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/roofline/roofline/internal/config"
	"github.com/roofline/roofline/internal/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// Labels and annotations roofline puts on what it creates. Every object of
// a server carries LabelManagedBy and LabelServer; destroy and refresh find
// them by these.
const (
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	ManagedBy        = "roofline"
	LabelServer      = "roofline.dev/server"
	LabelConfigHash  = "roofline.dev/config-hash"
	LabelRole        = "roofline.dev/role"
	AnnotationAddr   = "roofline.dev/address"
	AnnotationEngine = "roofline.dev/engine"
	// FieldManager is the server-side apply field manager.
	FieldManager = "roofline"
)

// Container and port names, fixed so that probes and the Service refer to them.
const (
	containerName = "engine"
	portName      = "http"
	// healthPath is where both engines answer 200 only when warm: vLLM
	// listens only after loading and warm-up; SGLang's /health is 503 until
	// its warm-up request passed (reference/engines/engines.md).
	healthPath = "/health"
	// startupPeriod is the startup probe's period; its failure threshold is
	// the load budget divided by it.
	startupPeriod = 10 * time.Second
)

// Spec is one cluster server with everything its objects are made from.
type Spec struct {
	Server  *config.Server
	Model   *config.Model
	Engine  *config.Engine
	Cluster *config.Cluster
	// Installed is the engine's flag list, for the same flag checks as on
	// a host; nil renders unchecked.
	Installed *engine.Installed
	// LoadTime is the engine's measured load time (from an earlier start);
	// 0 when unknown. The startup probe waits at least twice as long.
	LoadTime time.Duration
}

// Rendered is what one server becomes on the cluster.
type Rendered struct {
	Server string // the server's block name
	Addr   string // server.NAME
	// Name is the object name of the server: the Service's name, and with
	// the hash the workload's.
	Name string
	// Hash covers everything whose change needs new pods; it names the
	// workload, so that a replacement is a second object (blue/green).
	Hash      string
	Namespace string
	Workload  *unstructured.Unstructured // a Deployment or a LeaderWorkerSet
	// Preview is the generation's own Service (named like the workload):
	// the gates reach the new pods through it before the Service switches.
	Preview *unstructured.Unstructured
	// Service is the server's stable Service; its selector names the
	// generation that serves.
	Service     *unstructured.Unstructured
	Argv        []string // the leader's (or only pod's) command
	WorkerArgv  []string // the workers' command; nil for one node
	GPUResource string
	GPUsPerPod  int
	Replicas    int
	Nodes       int // pods per replica
	// Surge: the workload's rollout starts new pods before stopping old
	// ones (create_before_destroy), which needs free GPUs.
	Surge bool
	// StartupBudget is how long the startup probe lets the engine load.
	StartupBudget time.Duration
}

// Objects returns the server's objects in the order apply writes them:
// the Service last, once its generation passed the gates.
func (r *Rendered) Objects() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{r.Workload, r.Preview, r.Service}
}

// WorkloadName is the workload object's name for a config hash.
func WorkloadName(name, hash string) string { return name + "-" + hash }

// Render builds the objects of one cluster server. Flag problems are the
// engine's diagnostics, as on a host.
func Render(spec Spec) (*Rendered, hcl.Diagnostics) {
	s, c := spec.Server, spec.Cluster
	// In a pod the engine must listen on the pod's address for the Service
	// to reach it; the pod's network namespace is its boundary.
	srv := *s
	if srv.Host == "" {
		srv.Host = "0.0.0.0"
	}
	launch, diags := engine.Render(&srv, spec.Model, spec.Engine, spec.Installed)
	if diags.HasErrors() || launch == nil {
		return nil, diags
	}
	r := &Rendered{
		Server: s.Name, Addr: s.Addr(), Name: s.ObjectName(), Namespace: c.Namespace,
		GPUResource: c.GPUResource, GPUsPerPod: s.GPUsPerPod(), Replicas: s.Replicas, Nodes: max(1, s.Nodes),
		Surge: s.Lifecycle.CreateBeforeDestroy,
	}
	r.StartupBudget = s.Gate.HealthTimeout
	if 2*spec.LoadTime > r.StartupBudget {
		r.StartupBudget = 2 * spec.LoadTime
	}
	kind := spec.Engine.Kind
	if r.Nodes == 1 {
		r.Argv = launch.Argv
		tmpl := r.podTemplate(spec, launch, r.Argv, true)
		r.Hash = hashOf(tmpl)
		r.Workload = r.deployment(spec, tmpl)
	} else {
		r.Argv, r.WorkerArgv = multiNode(kind, launch.Argv, r.Nodes)
		leader := r.podTemplate(spec, launch, r.Argv, true)
		worker := r.podTemplate(spec, launch, r.WorkerArgv, false)
		r.Hash = hashOf(struct {
			Leader, Worker *corev1.PodTemplateSpec
			Size           int
		}{leader, worker, r.Nodes})
		r.Workload = r.leaderWorkerSet(spec, leader, worker)
	}
	r.Service = r.service(spec, r.Name, r.labels(""))
	r.Preview = r.service(spec, WorkloadName(r.Name, r.Hash), r.labels(r.Hash))
	return r, diags
}

// multiNode adds the multi-node flags to the rendered argv: vLLM's
// multiprocess mode (--nnodes, --node-rank, --master-addr, --headless on
// the workers) and SGLang's (--nnodes, --node-rank, --dist-init-addr). LWS
// sets LWS_LEADER_ADDRESS and LWS_WORKER_INDEX in every pod; Kubernetes
// expands $(VAR) in a container's command.
func multiNode(kind string, argv []string, nodes int) (leader, worker []string) {
	return engine.LookupOrDefault(kind).MultiNode(argv, nodes, "$(LWS_LEADER_ADDRESS)", "$(LWS_WORKER_INDEX)")
}

func (r *Rendered) labels(hash string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy, LabelServer: r.Name}
	if hash != "" {
		l[LabelConfigHash] = hash
	}
	return l
}

func (r *Rendered) annotations(spec Spec) map[string]string {
	return map[string]string{AnnotationAddr: r.Addr, AnnotationEngine: spec.Engine.Kind + "@" + spec.Engine.Version}
}

// podTemplate renders one pod: the engine container with its GPUs, shm and
// model volume, probes on the leader. The hash label is added afterwards.
func (r *Rendered) podTemplate(spec Spec, launch *engine.Launch, argv []string, leader bool) *corev1.PodTemplateSpec {
	c, s := spec.Cluster, spec.Server
	env := make([]corev1.EnvVar, 0, len(launch.Env))
	for _, k := range slices.Sorted(maps.Keys(launch.Env)) {
		env = append(env, corev1.EnvVar{Name: k, Value: launch.Env[k]})
	}
	gpus := resource.MustParse(strconv.Itoa(r.GPUsPerPod))
	ctr := corev1.Container{
		Name:            containerName,
		Image:           spec.Engine.Image,
		ImagePullPolicy: corev1.PullIfNotPresent, // pinned by digest: a local copy is the same image
		Command:         argv,
		Env:             env,
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceName(c.GPUResource): gpus},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "shm", MountPath: "/dev/shm"},
			{Name: "models", MountPath: c.ModelVolume.MountPath, ReadOnly: true},
		},
	}
	role := "worker"
	if leader {
		role = "leader"
		ctr.Ports = []corev1.ContainerPort{{Name: portName, ContainerPort: int32(s.Port), Protocol: corev1.ProtocolTCP}}
		probe := func(period time.Duration, failures int32) *corev1.Probe {
			return &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: healthPath, Port: intstr.FromString(portName)}},
				PeriodSeconds:    int32(period / time.Second),
				TimeoutSeconds:   5,
				FailureThreshold: failures,
				SuccessThreshold: 1,
			}
		}
		ctr.StartupProbe = probe(startupPeriod, int32(math.Ceil(float64(r.StartupBudget)/float64(startupPeriod))))
		ctr.ReadinessProbe = probe(5*time.Second, 3)
		ctr.LivenessProbe = probe(10*time.Second, 6)
	}
	if r.Nodes > 1 {
		// Cross-node NCCL over RDMA pins memory (vLLM's multi-node notes).
		ctr.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}
	}
	shm := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}
	if c.ShmSize != "" {
		if q, err := resource.ParseQuantity(c.ShmSize); err == nil {
			shm.SizeLimit = &q
		}
	}
	no := false
	pod := corev1.PodSpec{
		Containers:   []corev1.Container{ctr},
		NodeSelector: c.NodeSelector,
		// A Service named like an engine variable (a server "vllm" gives
		// VLLM_PORT=tcp://...) breaks the engine's own settings.
		EnableServiceLinks: &no,
		Volumes: []corev1.Volume{
			{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: shm}},
			{Name: "models", VolumeSource: modelVolume(c.ModelVolume)},
		},
	}
	for _, t := range c.Tolerations {
		pod.Tolerations = append(pod.Tolerations, corev1.Toleration{
			Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	labels := r.labels("")
	labels[LabelRole] = role
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod}
}

func modelVolume(v *config.ModelVolume) corev1.VolumeSource {
	switch v.Kind() {
	case "persistentVolumeClaim":
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Claim, ReadOnly: true}}
	case "image":
		return corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: v.Image, PullPolicy: corev1.PullIfNotPresent}}
	}
	dir := corev1.HostPathDirectory
	return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: v.HostPath, Type: &dir}}
}

// hashOf is the config hash: 10 hex digits of the SHA-256 of the JSON.
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // API types always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:5])
}

func stamp(t *corev1.PodTemplateSpec, hash string) {
	t.Labels[LabelConfigHash] = hash
}

// rollout is the explicit rolling update: never the 25 % defaults, which
// round to surge 1 / unavailable 0 for one replica and deadlock a server
// whose node has no spare GPU. create_before_destroy surges one replica;
// otherwise one replica at a time goes down first.
func (r *Rendered) rollout() (surge, unavailable intstr.IntOrString) {
	if r.Surge {
		return intstr.FromInt32(1), intstr.FromInt32(0)
	}
	return intstr.FromInt32(0), intstr.FromInt32(1)
}

func (r *Rendered) deployment(spec Spec, tmpl *corev1.PodTemplateSpec) *unstructured.Unstructured {
	stamp(tmpl, r.Hash)
	replicas := int32(r.Replicas)
	surge, unavailable := r.rollout()
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: WorkloadName(r.Name, r.Hash), Namespace: r.Namespace,
			Labels: r.labels(r.Hash), Annotations: r.annotations(spec),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: r.labels(r.Hash)},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
			Template: *tmpl,
		},
	}
	return toUnstructured(d)
}

func (r *Rendered) leaderWorkerSet(spec Spec, leader, worker *corev1.PodTemplateSpec) *unstructured.Unstructured {
	stamp(leader, r.Hash)
	stamp(worker, r.Hash)
	replicas := int32(r.Replicas)
	size := int32(r.Nodes)
	surge, unavailable := r.rollout()
	l := &lwsv1.LeaderWorkerSet{
		TypeMeta: metav1.TypeMeta{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: WorkloadName(r.Name, r.Hash), Namespace: r.Namespace,
			Labels: r.labels(r.Hash), Annotations: r.annotations(spec),
		},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas: &replicas,
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				LeaderTemplate: leader,
				WorkerTemplate: *worker,
				Size:           &size,
				// One rank lost stalls every collective of the group: the
				// whole group restarts together.
				RestartPolicy: lwsv1.RecreateGroupOnPodRestart,
			},
			// Workers start with the leader: the engines' rendezvous needs all
			// ranks, so waiting for a Ready leader (LeaderReady) would deadlock.
			StartupPolicy: lwsv1.LeaderCreatedStartupPolicy,
			RolloutStrategy: lwsv1.RolloutStrategy{
				Type: lwsv1.RollingUpdateStrategyType,
				RollingUpdateConfiguration: &lwsv1.RollingUpdateConfiguration{
					MaxSurge: surge, MaxUnavailable: unavailable,
				},
			},
		},
	}
	return toUnstructured(l)
}

func (r *Rendered) service(spec Spec, name string, labels map[string]string) *unstructured.Unstructured {
	sel := r.labels(r.Hash)
	sel[LabelRole] = "leader"
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: r.Namespace,
			Labels: labels, Annotations: r.annotations(spec),
		},
		Spec: corev1.ServiceSpec{
			// Cluster-internal: exposing it (Ingress, Gateway) is the cluster's business.
			Type:     corev1.ServiceTypeClusterIP,
			Selector: sel,
			Ports: []corev1.ServicePort{{
				Name: portName, Port: int32(spec.Server.Port), TargetPort: intstr.FromString(portName), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
	return toUnstructured(svc)
}

// toUnstructured converts a typed object into the apply patch: without
// status and the zero timestamps the typed structs carry.
func toUnstructured(obj runtime.Object) *unstructured.Unstructured {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("converting %T: %v", obj, err)) // API types always convert
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	prune(u.Object)
	return u
}

// prune drops nulls and empty maps (creationTimestamp: null, resources: {}),
// which an apply patch would otherwise claim.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}
