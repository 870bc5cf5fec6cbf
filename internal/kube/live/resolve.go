package live

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// ClusterIP reaches a Service at its cluster IP: apply must run where the
// cluster network is routed (a node, a pod, a VPN into it).
type ClusterIP struct{}

// Resolve is the Service's base URL: its cluster IP and first port.
func (ClusterIP) Resolve(_ context.Context, svc *corev1.Service) (string, func(), error) {
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
		return "", nil, fmt.Errorf("the Service %s has no cluster IP and port", svc.Name)
	}
	return "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port))), func() {}, nil
}
