package kubecontroller

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The API groups the controller serves: knit's own, and CloudKnit's, whose
// Environment has the same shape (internal/spec reads both).
var (
	KnitGroup      = schema.GroupVersion{Group: "knit.dev", Version: "v1"}
	CloudKnitGroup = schema.GroupVersion{Group: "stable.cloudknit.io", Version: "v1"}
)

// Finalizer is what keeps an Environment until its teardown has succeeded.
const Finalizer = "knit.dev/teardown"

// Environment is an environment file as a custom resource of knit.dev/v1:
// its spec is the file's spec (spec.EnvSpec) plus where its module files
// come from; its status is what the controller last saw.
type Environment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              EnvironmentSpec   `json:"spec"`
	Status            EnvironmentStatus `json:"status,omitempty"`
}

// CloudKnitEnvironment is the same resource in CloudKnit's group
// (stable.cloudknit.io/v1). It is a type of its own because a scheme maps
// each Go type to one kind.
type CloudKnitEnvironment Environment

// EnvironmentSpec is the spec as written: an environment file's spec
// (spec.EnvSpec is its schema) and the controller's own field "sources"
// (SpecExtra). It stays the written map, not a decoded struct, so that
// internal/spec parses exactly what the user wrote, with its diagnostics,
// and forms the file allows (a health check's url as a string or as
// {valueFrom}) survive.
type EnvironmentSpec map[string]any

// SpecExtra is what an Environment's spec holds beside an environment
// file's: the controller reads and removes it before parsing the rest.
type SpecExtra struct {
	// Sources are ConfigMaps whose files the controller writes into the
	// environment's folder before it reads the spec, so that local module
	// paths (./modules/x) resolve to them. Git module sources need none.
	Sources []Source `json:"sources,omitempty"`
}

// Source is one ConfigMap of the Environment's namespace, its keys written
// as files into Path (relative to the environment's folder).
type Source struct {
	ConfigMap string `json:"configMap"`
	Path      string `json:"path,omitempty"`
}

// EnvironmentStatus is what the controller last saw of an Environment.
type EnvironmentStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Reconciling, AwaitingApproval, Drifted and
	// Stalled, each with a reason from a closed set and a message.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Env is knit's name of the environment (team/env).
	Env string `json:"env,omitempty"`
	// LastRun is the ID of the controller's last run (knit logs RUN).
	LastRun string `json:"lastRun,omitempty"`
	// Approval is the plan waiting for an EnvironmentApproval.
	Approval *PendingApproval `json:"approval,omitempty"`
	// Components are the components as the last run left them.
	Components []ComponentStatus `json:"components,omitempty"`
	// TeardownAttempts counts the failed teardowns of a deleted object;
	// at MaxTeardownAttempts the controller stops trying.
	TeardownAttempts int `json:"teardownAttempts,omitempty"`
	// TeardownRetry is the value of knit.dev/retry-teardown that last
	// started the attempts over.
	TeardownRetry string `json:"teardownRetry,omitempty"`
}

// PendingApproval is the change set a gated run stopped at: an
// EnvironmentApproval naming Checksum carries it out.
type PendingApproval struct {
	Checksum string `json:"checksum"`
	// Teardown: the change destroys the environment (its deletion).
	Teardown bool `json:"teardown,omitempty"`
	// Components are the components whose plans wait.
	Components []string `json:"components,omitempty"`
}

// ComponentStatus is one component as a run left it.
type ComponentStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Reason is the engine's reason code (engine.Reason), Message the text.
	Reason   string   `json:"reason,omitempty"`
	Message  string   `json:"message,omitempty"`
	Upstream []string `json:"upstream,omitempty"`
	// PlanChecksum is the checksum of a plan waiting for approval.
	PlanChecksum string `json:"planChecksum,omitempty"`
}

// EnvironmentList is a list of Environments.
type EnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Environment `json:"items"`
}

// CloudKnitEnvironmentList is a list of CloudKnitEnvironments.
type CloudKnitEnvironmentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloudKnitEnvironment `json:"items"`
}

// EnvironmentApproval approves the exact plan waiting for an Environment
// of its namespace: the change set whose checksum it names. Who may create
// one is the cluster's RBAC to decide.
type EnvironmentApproval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ApprovalSpec   `json:"spec"`
	Status            ApprovalStatus `json:"status,omitempty"`
}

// ApprovalSpec names the Environment and the plan approved.
type ApprovalSpec struct {
	// Environment is the Environment's name in this namespace.
	Environment string `json:"environment"`
	// APIVersion is the Environment's group: knit.dev/v1 (default) or
	// stable.cloudknit.io/v1.
	APIVersion string `json:"apiVersion,omitempty"`
	// Checksum is the waiting change set's (status.approval.checksum of
	// the Environment; its first 12 characters or more suffice).
	Checksum string `json:"checksum"`
	// Reason is why, for the audit trail.
	Reason string `json:"reason,omitempty"`
}

// ApprovalStatus says whether the approval was carried out: condition
// Approved True (the run it started in Run), or False with why not.
type ApprovalStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Run                string             `json:"run,omitempty"`
}

// EnvironmentApprovalList is a list of EnvironmentApprovals.
type EnvironmentApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EnvironmentApproval `json:"items"`
}

// AddToScheme registers the controller's types.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(KnitGroup, &Environment{}, &EnvironmentList{}, &EnvironmentApproval{}, &EnvironmentApprovalList{})
	// CloudKnit's kind is Environment too; the Go type has another name.
	s.AddKnownTypeWithName(CloudKnitGroup.WithKind("Environment"), &CloudKnitEnvironment{})
	s.AddKnownTypeWithName(CloudKnitGroup.WithKind("EnvironmentList"), &CloudKnitEnvironmentList{})
	metav1.AddToGroupVersion(s, KnitGroup)
	metav1.AddToGroupVersion(s, CloudKnitGroup)
	return nil
}

// deepCopy copies through JSON: the spec holds free-form values (any) that
// generated deep-copy functions could not copy either, and these objects
// are small.
func deepCopy[T any](in *T) *T {
	if in == nil {
		return nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		panic("kubecontroller: copy: " + err.Error())
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic("kubecontroller: copy: " + err.Error())
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (e *Environment) DeepCopyObject() runtime.Object { return deepCopy(e) }

// DeepCopyObject implements runtime.Object.
func (e *CloudKnitEnvironment) DeepCopyObject() runtime.Object { return deepCopy(e) }

// DeepCopyObject implements runtime.Object.
func (l *EnvironmentList) DeepCopyObject() runtime.Object { return deepCopy(l) }

// DeepCopyObject implements runtime.Object.
func (l *CloudKnitEnvironmentList) DeepCopyObject() runtime.Object { return deepCopy(l) }

// DeepCopyObject implements runtime.Object.
func (a *EnvironmentApproval) DeepCopyObject() runtime.Object { return deepCopy(a) }

// DeepCopyObject implements runtime.Object.
func (l *EnvironmentApprovalList) DeepCopyObject() runtime.Object { return deepCopy(l) }
