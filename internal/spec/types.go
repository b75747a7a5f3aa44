package spec

import (
	"strings"

	"knit.dev/knit/internal/diag"
)

// API versions knit reads. Both share one shape; knit's adds component types
// and blocks that CloudKnit never had.
const (
	APIVersionCloudKnit = "stable.cloudknit.io/v1"
	APIVersionKnit      = "knit.dev/v1"
	KindEnvironment     = "Environment"
)

// Component types.
const (
	TypeTerraform = "terraform"
	TypeHelm      = "helm"
	TypeManifests = "manifests"
	TypeScript    = "script"
)

// Environment is one parsed Environment file. Every field CloudKnit defines is
// kept, whether or not knit acts on it yet.
type Environment struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       EnvSpec  `json:"spec"`

	// File is the path the environment was read from; Dir the folder every
	// relative path in it resolves against. Root is the folder no local
	// path may leave, symlinks followed (see Contain): Dir when empty (the
	// CLI), the commit's tree in GitOps.
	File string `json:"-"`
	Dir  string `json:"-"`
	Root string `json:"-"`
	// Text is the file as written, when it was parsed from one: a revision
	// keeps it for diffs.
	Text []byte `json:"-"`
	// Up is the folder no local path may leave (Root), relative to Dir,
	// when a template or an extended file widened it (see template.go);
	// kept in a revision so that a spec read back resolves as it loaded.
	Up string `json:"up,omitempty"`
	// Sources are the files the environment was built from besides its
	// own: its template and the files it extends, with their identity.
	Sources []SourceFile `json:"-"`
	// Promoted are the values of its template's promote: true parameters
	// as resolved: with the template's identity, what a pipeline's
	// release is.
	Promoted map[string]any `json:"-"`

	pos map[string]diag.Pos
	bad map[string]bool // field paths whose values could not be decoded
	// via says, by "file:line" of a template, which parameters that line
	// uses and where their values were written (for render --explain).
	via map[string]string
	// selfCheck: the environment stands in for a template checked on its
	// own (CheckTemplate); parameters without a value get placeholders,
	// and placed says, by "file:line" of the template, which placeholders
	// that line uses.
	selfCheck    bool
	placeholders map[string]bool
	placed       map[string][]string
	opts         Options
}

// Metadata is Kubernetes-style object metadata; unknown fields are allowed here.
type Metadata struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// EnvSpec is the body of an Environment.
type EnvSpec struct {
	TeamName           string              `json:"teamName"`
	EnvName            string              `json:"envName"`
	Description        string              `json:"description,omitempty"`
	AutoApprove        bool                `json:"autoApprove,omitempty"`
	Teardown           bool                `json:"teardown,omitempty"`
	Workspace          string              `json:"workspace,omitempty"`
	ZLocals            []LocalVariable     `json:"zlocals,omitempty"`
	SelectiveReconcile *SelectiveReconcile `json:"selectiveReconcile,omitempty"`
	// Drift is when the server checks for drift and what it then does
	// (knit.dev/v1 only); Approval who may approve (knit.dev/v1 only).
	Drift    *DriftPolicy    `json:"drift,omitempty"`
	Approval *ApprovalPolicy `json:"approval,omitempty"`
	// TTL makes the environment ephemeral (knit.dev/v1 only): knit serve
	// tears it down this long after its first apply ("72h"; see TTLDuration).
	TTL string `json:"ttl,omitempty"`
	// Kubeconfig is the cluster access of every helm and manifests
	// component that sets none of its own (knit.dev/v1 only).
	Kubeconfig *Kubeconfig `json:"kubeconfig,omitempty"`
	// Template, Extends, Parameters and Overrides say how the components
	// are built from other files (knit.dev/v1 only; see template.go). A
	// loaded environment has them resolved into Components and cleared:
	// what runs, and what a revision records, is a plain environment.
	Template   *TemplateRef   `json:"template,omitempty"`
	Extends    *ExtendsRef    `json:"extends,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
	Overrides  *Overrides     `json:"overrides,omitempty"`
	// Health is the environment's own health checks and when the server
	// re-checks health (knit.dev/v1 only).
	Health *HealthPolicy `json:"health,omitempty"`
	// Rollout is what a failed verification leads to (knit.dev/v1 only).
	Rollout *Rollout `json:"rollout,omitempty"`
	// Policies are folders of Rego policies, relative to the
	// environment's folder and inside it, that judge its runs' plans
	// beside the ones knit is given (knit.dev/v1 only).
	Policies []string `json:"policies,omitempty"`
	// Exports are the outputs other environments may read, and which
	// teams' (knit.dev/v1 only; see exports.go).
	Exports    []Export     `json:"exports,omitempty"`
	Components []*Component `json:"components"`
}

// Drift policies: what a scheduled drift check does with what it finds.
const (
	DriftReconcile = "reconcile" // apply the fix at once
	DriftApprove   = "approve"   // prepare the fix and wait for approval
	DriftAlert     = "alert"     // only report
)

// DriftPolicy schedules drift checks ("@every 30m" or cron) and says what
// to do with drift (reconcile, approve or alert; default: follow autoApprove).
type DriftPolicy struct {
	Schedule string `json:"schedule,omitempty"`
	Policy   string `json:"policy,omitempty"`
}

// ApprovalPolicy constrains who may approve a plan.
type ApprovalPolicy struct {
	// RequireOtherApprover refuses an approval by the author of the change.
	RequireOtherApprover bool `json:"requireOtherApprover,omitempty"`
}

// LocalVariable is a zlocal: a value substituted for ${zlocals.NAME} in strings.
type LocalVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Type  string `json:"type,omitempty"`
}

// SelectiveReconcile limits a run to components tagged TagName=one of TagValues
// (or, with SkipMode, to all the others).
type SelectiveReconcile struct {
	TagName   string   `json:"tagName"`
	TagValues []string `json:"tagValues"`
	SkipMode  bool     `json:"skipMode,omitempty"`
}

// Component is one unit provisioned together.
type Component struct {
	Name              string         `json:"name"`
	Type              string         `json:"type"`
	Subtype           string         `json:"subtype,omitempty"`
	Module            *Module        `json:"module,omitempty"`
	Chart             *Chart         `json:"chart,omitempty"`
	Manifests         *Manifests     `json:"manifests,omitempty"`
	Script            *Script        `json:"script,omitempty"`
	DependsOn         []string       `json:"dependsOn,omitempty"`
	Tags              []Tag          `json:"tags,omitempty"`
	CronSchedule      string         `json:"cronSchedule,omitempty"`
	Drift             *DriftPolicy   `json:"drift,omitempty"`
	AWS               *AWS           `json:"aws,omitempty"`
	AutoApprove       *bool          `json:"autoApprove,omitempty"`
	Destroy           bool           `json:"destroy,omitempty"`
	DestroyProtection bool           `json:"destroyProtection,omitempty"`
	VariablesFile     *VariablesFile `json:"variablesFile,omitempty"`
	OverlayFiles      []OverlayFile  `json:"overlayFiles,omitempty"`
	OverlayData       []OverlayData  `json:"overlayData,omitempty"`
	Variables         []Variable     `json:"variables,omitempty"`
	Secrets           []Secret       `json:"secrets,omitempty"`
	Outputs           []Output       `json:"outputs,omitempty"`
	// Kubeconfig is how a helm or manifests component reaches its cluster
	// (knit.dev/v1 only); unset, the environment's applies.
	Kubeconfig *Kubeconfig `json:"kubeconfig,omitempty"`
	// Health are the checks that tell whether the component works once
	// applied (knit.dev/v1 only).
	Health []HealthCheck `json:"health,omitempty"`
	// Canary, BlueGreen mark the component for the rollout strategy's
	// second instance (see strategy.go; knit.dev/v1 only).
	Canary    bool `json:"canary,omitempty"`
	BlueGreen bool `json:"blueGreen,omitempty"`
}

// Module says where a Terraform/OpenTofu module comes from.
type Module struct {
	Source  string `json:"source"`
	Name    string `json:"name,omitempty"`
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
}

// Chart is a Helm chart (knit.dev/v1 only), from one of three sources:
//   - a local folder or packaged chart: Path, relative to the environment's folder;
//   - a git repository: Git (a clone URL) at Ref, the chart in the folder Path inside it;
//   - a chart repository (Repo an https URL) or an OCI registry (Repo
//     oci://host/path): the chart Name at Version.
type Chart struct {
	Path    string `json:"path,omitempty"`
	Git     string `json:"git,omitempty"`
	Ref     string `json:"ref,omitempty"`
	Repo    string `json:"repo,omitempty"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Release is the release name; default: the component's name.
	Release string `json:"release,omitempty"`
	// Namespace is the release's namespace, created when missing; default
	// TEAM-ENV (see DefaultNamespace).
	Namespace string `json:"namespace,omitempty"`
	// ValuesFiles are YAML files of values, relative to the environment's
	// folder, merged in order; then Values; then each variable, whose name
	// is a dotted path into the values (image.tag).
	ValuesFiles []string       `json:"valuesFiles,omitempty"`
	Values      map[string]any `json:"values,omitempty"`
	// Wait makes apply wait until the release's objects are ready, for at
	// most Timeout (a Go duration; default 5m).
	Wait    bool   `json:"wait,omitempty"`
	Timeout string `json:"timeout,omitempty"`
	// Test runs the chart's test hooks (helm test) after each apply; a
	// failing test fails the apply, as a health check.
	Test bool `json:"test,omitempty"`
	// MaxHistory is how many release revisions Helm keeps (default 10).
	MaxHistory int `json:"maxHistory,omitempty"`
	// SkipCRDs leaves the chart's crds/ folder alone, as helm install
	// --skip-crds: its CustomResourceDefinitions must exist already.
	SkipCRDs bool `json:"skipCRDs,omitempty"`
	// Dependencies says where the chart's dependencies come from:
	// DependenciesVendor (the default), its charts/ folder; or
	// DependenciesBuild, fetched at each load by Helm's dependency build
	// (Chart.lock's versions) from the repositories Chart.yaml names.
	Dependencies string `json:"dependencies,omitempty"`
}

// Where a chart's dependencies come from (Chart.Dependencies).
const (
	DependenciesVendor = "vendor"
	DependenciesBuild  = "build"
)

// DefaultMaxHistory is the number of release revisions Helm keeps when a
// chart sets no maxHistory.
const DefaultMaxHistory = 10

// Manifests is a folder or file of Kubernetes manifests (knit.dev/v1 only).
// A folder holding a kustomization.yaml is built with kustomize. Every
// ${var.NAME} in the files is replaced by the variable NAME.
type Manifests struct {
	Path string `json:"path"`
	// Namespace is given to namespaced objects that name none, and is
	// created when missing; default TEAM-ENV (see DefaultNamespace).
	Namespace string `json:"namespace,omitempty"`
}

// Kubeconfig is how a helm or manifests component reaches its cluster. Set
// exactly one way (knit.dev/v1 only):
//   - Path: a kubeconfig file anywhere the user can read (relative to the
//     environment's folder, absolute, or ~/...), with Context: one of its
//     contexts;
//   - FromEnv: the name of a variable of knit's environment holding the
//     kubeconfig's path (KUBECONFIG, or a name containing KUBECONFIG), with
//     Context optional;
//   - Context alone: a context of the default kubeconfig ($KUBECONFIG or ~/.kube/config);
//   - ValueFrom: an upstream output holding a whole kubeconfig (Context optional);
//   - Server, CA and Token: each a value or a valueFrom.
//
// Credentials that arrive through valueFrom stay in memory: knit never
// writes them to a file or a log.
type Kubeconfig struct {
	Path      string     `json:"path,omitempty"`
	FromEnv   string     `json:"fromEnv,omitempty"`
	Context   string     `json:"context,omitempty"`
	ValueFrom ValueFrom  `json:"valueFrom,omitempty"`
	Server    *KubeValue `json:"server,omitempty"`
	CA        *KubeValue `json:"ca,omitempty"`
	Token     *KubeValue `json:"token,omitempty"`

	// inherited is set on a component's copy of the environment's
	// kubeconfig, which is validated once, at spec.kubeconfig.
	inherited bool
}

// KubeValue is one part of cluster access: a literal Value or ValueFrom an
// upstream output.
type KubeValue struct {
	Value     string    `json:"value,omitempty"`
	ValueFrom ValueFrom `json:"valueFrom,omitempty"`
}

// Script is a component run by user commands (knit.dev/v1 only). Apply prints
// the component's outputs as a JSON object on stdout.
type Script struct {
	Apply   string `json:"apply"`
	Destroy string `json:"destroy,omitempty"`
	Plan    string `json:"plan,omitempty"`
}

// Tag labels a component for selectiveReconcile.
type Tag struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// AWS is CloudKnit's provider block; kept, not acted on.
type AWS struct {
	Region     string      `json:"region,omitempty"`
	AssumeRole *AssumeRole `json:"assumeRole,omitempty"`
}

// AssumeRole is CloudKnit's AWS role to assume.
type AssumeRole struct {
	RoleARN     string `json:"roleArn"`
	SessionName string `json:"sessionName,omitempty"`
	ExternalID  string `json:"externalId,omitempty"`
}

// VariablesFile is a .tfvars file, local (no Source) or from a git repository at Ref.
type VariablesFile struct {
	Source string `json:"source,omitempty"`
	Path   string `json:"path"`
	Ref    string `json:"ref,omitempty"`
}

// OverlayFile adds files to the module's folder, local (no Source) or from git.
type OverlayFile struct {
	Source string   `json:"source,omitempty"`
	Ref    string   `json:"ref,omitempty"`
	Paths  []string `json:"paths"`
}

// OverlayData adds a file with inline content to the module's folder.
type OverlayData struct {
	Name string `json:"name"`
	Data string `json:"data"`
}

// Variable is one module input: a literal Value (any YAML value; lists and
// maps stay typed) or ValueFrom another component's output.
type Variable struct {
	Name      string    `json:"name"`
	Value     any       `json:"value,omitempty"`
	ValueFrom ValueFrom `json:"valueFrom,omitempty"`
}

// Secret names a secret to inject; kept, not yet acted on.
type Secret struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
	Key   string `json:"key"`
}

// Output declares an output other components may reference.
type Output struct {
	Name      string `json:"name"`
	Sensitive bool   `json:"sensitive,omitempty"`
	// From reads the output from a live object of a helm or manifests
	// component (knit.dev/v1 only): "Kind/name:path" or
	// "Kind/namespace/name:path", e.g. "Service/web:.spec.clusterIP" or
	// "ConfigMap/app/settings:.data.url"; see ParseObjectField.
	From string `json:"from,omitempty"`
}

// ID returns the environment's identity, team/env.
func (e *Environment) ID() string { return e.Spec.TeamName + "/" + e.Spec.EnvName }

// TeamOf is the team of an environment ID (team/env): the part before the
// slash, or the whole ID when it has none.
func TeamOf(id string) string {
	team, _, _ := strings.Cut(id, "/")
	return team
}

// Component returns the named component, or nil.
func (e *Environment) Component(name string) *Component {
	for _, c := range e.Spec.Components {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Pos returns where the field at path (e.g. "spec.components[1].dependsOn[0]")
// was written; the file alone when unknown.
func (e *Environment) Pos(path string) diag.Pos {
	if p, ok := e.pos[path]; ok {
		return p
	}
	return diag.Pos{File: e.File}
}

// EffectiveAutoApprove is the component's autoApprove, else the environment's.
func (e *Environment) EffectiveAutoApprove(c *Component) bool {
	if c.AutoApprove != nil {
		return *c.AutoApprove
	}
	return e.Spec.AutoApprove
}

// Output returns the declared output by name, or nil.
func (c *Component) Output(name string) *Output {
	for i := range c.Outputs {
		if c.Outputs[i].Name == name {
			return &c.Outputs[i]
		}
	}
	return nil
}

// HasTag reports whether the component carries tag name with one of values.
func (c *Component) HasTag(name string, values []string) bool {
	for _, t := range c.Tags {
		if t.Name != name {
			continue
		}
		for _, v := range values {
			if t.Value == v {
				return true
			}
		}
	}
	return false
}
