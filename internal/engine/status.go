package engine

// Status is where one component stands in a run. Statuses are ordered by
// severity so a run's components roll up into one environment status.
type Status string

// Component statuses.
const (
	Pending    Status = "pending"
	Planning   Status = "planning"
	Applying   Status = "applying"
	Destroying Status = "destroying"

	UpToDate  Status = "up to date"        // fingerprint unchanged: the tool was not run
	NoChanges Status = "no changes"        // planned, nothing to do
	Planned   Status = "planned"           // plan has changes (plan runs only)
	Deferred  Status = "known after apply" // inputs come from components not yet applied

	Checking   Status = "checking"
	InSync     Status = "in sync"
	Drifted    Status = "drifted"
	Affected   Status = "affected by upstream drift"
	Unknown    Status = "unknown" // drift: the tool cannot compare with reality (a script without plan)
	NotApplied Status = "not applied"
	Applied    Status = "applied"
	Destroyed  Status = "destroyed"
	Awaiting   Status = "awaiting-approval"
	Waiting    Status = "waiting" // an upstream component awaits approval
	Skipped    Status = "skipped" // an upstream component failed
	Refused    Status = "refused" // destroyProtection, or a live dependent
	Failed     Status = "failed"
	Canceled   Status = "interrupted"
)

// IsTerminal reports whether the component is done for this run.
func (s Status) IsTerminal() bool {
	switch s {
	case Pending, Planning, Applying, Destroying:
		return false
	}
	return true
}

// IsError reports whether the status makes the run fail.
func (s Status) IsError() bool {
	return s == Failed || s == Refused || s == Skipped || s == Canceled
}

var severity = map[Status]int{
	UpToDate: 0, NoChanges: 0, Applied: 0, Destroyed: 0, InSync: 0, NotApplied: 0, Unknown: 0,
	Planned: 1, Deferred: 1, Drifted: 1, Affected: 1,
	Pending: 2, Planning: 2, Applying: 2, Destroying: 2, Checking: 2,
	Waiting: 3, Awaiting: 4, Skipped: 5, Refused: 6, Canceled: 7, Failed: 8,
}

// Worse returns the more severe of a and b.
func Worse(a, b Status) Status {
	if severity[b] > severity[a] {
		return b
	}
	return a
}

// Environment statuses: what an environment's last run left it as, in the
// store and the API. These words, and the component Status words above,
// are the one vocabulary of the CLI, the API and the dashboard. An applied
// environment keeps its first machine word, "provisioned", so API clients
// and filters keep working; EnvLabel renders it "applied", the word its
// components use, wherever people read it.
const (
	EnvApplied     = "provisioned"
	EnvFailed      = "failed"
	EnvAwaiting    = "awaiting-approval"
	EnvInterrupted = "interrupted"
	EnvDrifted     = "drifted"
	EnvTornDown    = "torn-down"
)

// EnvLabel is an environment status as the CLI and the dashboard show it:
// the machine word itself, but "applied" for EnvApplied and "new" for an
// environment no run has finished.
func EnvLabel(status string) string {
	switch status {
	case EnvApplied:
		return "applied"
	case "":
		return "new"
	}
	return status
}

// EnvStatusOf is the stored status a person's word names, for filters:
// "applied" (EnvLabel's word) is EnvApplied; any other word is itself.
func EnvStatusOf(word string) string {
	if word == "applied" {
		return EnvApplied
	}
	return word
}
