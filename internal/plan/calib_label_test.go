package plan

import (
	"testing"
	"time"
)

// TestCalibrationLabel: the prediction line says what was measured and
// what was corrected, in words; a tiny residual is not "-0.0 %".
func TestCalibrationLabel(t *testing.T) {
	at := time.Date(2026, 12, 1, 19, 46, 45, 0, time.UTC)
	tests := []struct {
		c    *Calibration
		want string
	}{
		{nil, "uncalibrated"},
		{&Calibration{Status: CalibMeasured, FromServer: "web", FromTime: at}, "measured (start of web, 2026-12-01 19:46:45)"},
		{&Calibration{Status: CalibEstimated, Residual: -0.0001, FromServer: "old", FromTime: at},
			"estimated: roofline's formula, corrected by +0.0 %, its error at the start of old (2026-12-01 19:46:45)"},
		{&Calibration{Status: CalibEstimated, Residual: 0.031, FromServer: "old", FromTime: at},
			"estimated: roofline's formula, corrected by +3.1 %, its error at the start of old (2026-12-01 19:46:45)"},
	}
	for _, tt := range tests {
		if got := tt.c.Label(); got != tt.want {
			t.Errorf("Label() = %q\n           want %q", got, tt.want)
		}
	}
}
