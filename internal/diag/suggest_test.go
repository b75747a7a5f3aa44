package diag

import "testing"

func TestDidYouMean(t *testing.T) {
	for _, tt := range []struct{ s, want string }{
		{"fiel", `did you mean "file"?`},
		{"Pipline", `did you mean "Pipeline"?`},
		{"APPROVAL", `did you mean "approval"?`},
		{"zzzz", ""},
	} {
		if got := DidYouMean(tt.s, []string{"file", "approval", "Pipeline"}); got != tt.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}
