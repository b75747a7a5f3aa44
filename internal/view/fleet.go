package view

// LiveEnvironment is an environment an EnvironmentSet's environments
// generator may select, as a team reads it: applied and not torn down,
// its metadata.labels, and only the outputs it exports to that team (by
// component, then output name; sensitive ones never).
type LiveEnvironment struct {
	Team    string                    `json:"team"`
	Name    string                    `json:"name"`
	Labels  map[string]string         `json:"labels,omitempty"`
	Outputs map[string]map[string]any `json:"outputs,omitempty"`
}
