package engine

import (
	"github.com/roofline/roofline/internal/engine/logdiag"
)

// The classifiers of engine logs: one per kind (the shared rules and the
// kind's), and one of every kind for a log whose engine is not known. Built
// once, after the registry.
var anyLogs *logdiag.Classifier

func initLogs() {
	all := make([]logdiag.Rules, 0, len(registry))
	for _, k := range registry {
		k.classifier = logdiag.New(k.logs)
		all = append(all, k.logs)
	}
	anyLogs = logdiag.New(all...)
}

// Logs returns the classifier of this kind's logs.
func (k *Kind) Logs() *logdiag.Classifier { return k.classifier }

// Diagnose names the cause of a failed start from the kind's log.
func (k *Kind) Diagnose(log []byte) logdiag.Diagnosis { return k.classifier.Classify(log) }

// Footprint reads the memory figures of a start from the kind's log; nil
// when the log has none.
func (k *Kind) Footprint(log []byte) *logdiag.Footprint { return k.classifier.Footprint(log) }

// LogsOf returns the classifier of the kind named name, or of every kind
// when name names none (a log file without a state record, a pod's log).
func LogsOf(name string) *logdiag.Classifier {
	if k := Lookup(name); k != nil {
		return k.classifier
	}
	return anyLogs
}
