package runner

import "context"

// Unavailable returns a Runner whose every call fails with err: used when a
// tool is missing, so only the components that need it fail.
func Unavailable(err error) Runner { return unavailable{err} }

type unavailable struct{ err error }

func (u unavailable) Fingerprint(context.Context, Component, Inputs) (string, error) {
	return "", u.err
}
func (u unavailable) Plan(context.Context, Component, Inputs, PlanOptions) (*Plan, error) {
	return nil, u.err
}
func (u unavailable) Apply(context.Context, Component, *Plan) (Outputs, error) { return nil, u.err }
func (u unavailable) Destroy(context.Context, Component, Inputs) error         { return u.err }
func (u unavailable) Outputs(context.Context, Component) (Outputs, error)      { return nil, u.err }
