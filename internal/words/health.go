package words

// Verdict is a health check's outcome, as Argo Rollouts names an
// analysis' outcome; an environment's health is its worst check's.
type Verdict string

// Verdicts.
const (
	VerdictSuccessful   Verdict = "Successful"
	VerdictFailed       Verdict = "Failed"
	VerdictInconclusive Verdict = "Inconclusive"
)

// Verdicts is the closed set, in the order the OpenAPI document lists it.
func Verdicts() []Verdict {
	return []Verdict{VerdictSuccessful, VerdictFailed, VerdictInconclusive}
}
