package terraform

// InitCount reports how many times r ran init, for tests proving that an
// unchanged module is not initialised again.
func InitCount(r *Runner) int64 { return r.inits.Load() }

// CommandCount reports how many tool processes r started.
func CommandCount(r *Runner) int64 { return r.commands.Load() }

// LayoutCount reports how many times r read a whole module (collected a layout).
func LayoutCount(r *Runner) int64 { return r.collected.Load() }

// ScrubState is scrubState, for tests of a real tool's state.
func ScrubState(data []byte) ([]byte, error) { return scrubState(data) }
