package health

import "testing"

// phases turns "SFIE" into measurements of those phases.
func phases(s string) []Measurement {
	var ms []Measurement
	for _, r := range s {
		p := map[rune]Phase{'S': PhaseSuccessful, 'F': PhaseFailed, 'I': PhaseInconclusive, 'E': PhaseError}[r]
		ms = append(ms, Measurement{Phase: p})
	}
	return ms
}

// TestAssess is Argo Rollouts' assessment of a metric, case by case.
func TestAssess(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		got    string
		want   Verdict // "" not decided yet
		why    Reason
	}{
		{"nothing measured", Limits{Count: 1, ConsecutiveErrorLimit: 4}, "", "", ""},
		{"one success", Limits{Count: 1, ConsecutiveErrorLimit: 4}, "S", Successful, ReasonCountReached},
		{"count not reached", Limits{Count: 3, ConsecutiveErrorLimit: 4}, "SS", "", ""},
		{"count reached", Limits{Count: 3, ConsecutiveErrorLimit: 4}, "SSS", Successful, ReasonCountReached},
		{"failure limit 0: one failure fails", Limits{Count: 3, ConsecutiveErrorLimit: 4}, "SF", Failed, ReasonFailureLimit},
		{"failures within the limit", Limits{Count: 3, FailureLimit: 1, ConsecutiveErrorLimit: 4}, "SFS", Successful, ReasonCountReached},
		{"failures beyond the limit", Limits{Count: 5, FailureLimit: 1, ConsecutiveErrorLimit: 4}, "FSF", Failed, ReasonFailureLimit},
		{"inconclusive beyond the limit", Limits{Count: 3, ConsecutiveErrorLimit: 4}, "I", Inconclusive, ReasonInconclusiveLimit},
		{"inconclusive within the limit", Limits{Count: 2, InconclusiveLimit: 1, ConsecutiveErrorLimit: 4}, "IS", Successful, ReasonCountReached},
		{"errors do not count towards count", Limits{Count: 2, ConsecutiveErrorLimit: 4}, "SEE", "", ""},
		{"errors in a row within the limit", Limits{Count: 1, ConsecutiveErrorLimit: 4}, "EEEE", "", ""},
		{"errors in a row beyond the limit", Limits{Count: 1, ConsecutiveErrorLimit: 4}, "EEEEE", Inconclusive, ReasonErrorLimit},
		{"error limit 0: one error decides", Limits{Count: 3}, "SE", Inconclusive, ReasonErrorLimit},
		{"errors not in a row", Limits{Count: 3, ConsecutiveErrorLimit: 1}, "SESE", "", ""},
		{"a measurement ends a run of errors", Limits{Count: 2, ConsecutiveErrorLimit: 1}, "ESES", Successful, ReasonCountReached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, why, msg, done := Assess(tt.limits, phases(tt.got))
			if done != (tt.want != "") || v != tt.want || why != tt.why {
				t.Errorf("Assess(%s) = %q %q %q %v, want %q %q", tt.got, v, why, msg, done, tt.want, tt.why)
			}
		})
	}
}

func TestWorse(t *testing.T) {
	if !Worse(Failed, Inconclusive) || !Worse(Inconclusive, Successful) || Worse(Successful, Failed) || Worse(Failed, Failed) {
		t.Error("want Failed > Inconclusive > Successful")
	}
}
