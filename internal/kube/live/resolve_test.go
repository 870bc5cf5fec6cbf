package live

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestClusterIP(t *testing.T) {
	svc := func(ip string, ports ...int32) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: ip}}
		s.Name = "qwen-g2"
		for _, p := range ports {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: p})
		}
		return s
	}
	for _, tc := range []struct {
		svc  *corev1.Service
		want string
	}{
		{svc("10.0.0.7", 8000, 9000), "http://10.0.0.7:8000"},
		{svc("fd00::7", 8000), "http://[fd00::7]:8000"},
		{svc("", 8000), ""},
		{svc(corev1.ClusterIPNone, 8000), ""},
		{svc("10.0.0.7"), ""},
	} {
		got, stop, err := ClusterIP{}.Resolve(context.Background(), tc.svc)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("%s %v: %q, %v; want %q", tc.svc.Spec.ClusterIP, tc.svc.Spec.Ports, got, err, tc.want)
		}
		if stop != nil {
			stop()
		}
	}
}
