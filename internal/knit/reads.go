package knit

// Records answers the library's stored records as read models: runs,
// revisions, change sets, locks and leases, counts, tokens, expiries,
// server settings, pipelines and environments by ID. It only reads
// (STYLE.md 10e: a read model is a small type of its own, not one more
// method of Knit); every lookup of an environment applies ctx's caller
// (WithCaller), as Knit's do. It is safe for concurrent use.
type Records struct{ k *Knit }

// NewRecords is the records of k.
func NewRecords(k *Knit) *Records { return &Records{k: k} }
