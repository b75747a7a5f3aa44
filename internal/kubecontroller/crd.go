package kubecontroller

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"knit.dev/knit/internal/spec"
)

// The CRDs are generated from the Go types (the environment file's
// spec.EnvSpec, and this package's status and approval types), so that
// the files in deploy/crds cannot drift from what knit reads: a test
// compares them with CRDs() and rewrites them with -update.

// CRDs returns the controller's custom resource definitions: Environment
// in knit.dev/v1 and in stable.cloudknit.io/v1, and EnvironmentApproval.
func CRDs() []apiextensionsv1.CustomResourceDefinition {
	envSchema := object(map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": {Type: "string"},
		"kind":       {Type: "string"},
		"metadata":   {Type: "object"},
		"spec":       merge(schemaOf(reflect.TypeFor[spec.EnvSpec]()), schemaOf(reflect.TypeFor[SpecExtra]())),
		"status":     schemaOf(reflect.TypeFor[EnvironmentStatus]()),
	})
	approvalSchema := object(map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": {Type: "string"},
		"kind":       {Type: "string"},
		"metadata":   {Type: "object"},
		"spec":       schemaOf(reflect.TypeFor[ApprovalSpec]()),
		"status":     schemaOf(reflect.TypeFor[ApprovalStatus]()),
	})
	approvalSchema.Properties["spec"] = required(approvalSchema.Properties["spec"], "environment", "checksum")
	envColumns := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Env", Type: "string", JSONPath: ".status.env"},
		{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
		{Name: "Reason", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].reason`},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	approvalColumns := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Environment", Type: "string", JSONPath: ".spec.environment"},
		{Name: "Approved", Type: "string", JSONPath: `.status.conditions[?(@.type=="Approved")].status`},
		{Name: "Reason", Type: "string", JSONPath: `.status.conditions[?(@.type=="Approved")].reason`},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	return []apiextensionsv1.CustomResourceDefinition{
		crd(KnitGroup.Group, "Environment", "environments", []string{"env", "knitenv"}, envSchema, envColumns),
		crd(CloudKnitGroup.Group, "Environment", "environments", nil, envSchema, envColumns),
		crd(KnitGroup.Group, "EnvironmentApproval", "environmentapprovals", []string{"envapproval"}, approvalSchema, approvalColumns),
	}
}

func crd(group, kind, plural string, short []string, schema apiextensionsv1.JSONSchemaProps, cols []apiextensionsv1.CustomResourceColumnDefinition) apiextensionsv1.CustomResourceDefinition {
	return apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind), ShortNames: short,
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
				Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: cols,
			}},
		},
	}
}

// CRDFile is the file name of a CRD in deploy/crds.
func CRDFile(c apiextensionsv1.CustomResourceDefinition) string {
	return c.Spec.Group + "_" + c.Spec.Names.Plural + ".yaml"
}

// CRDYAML renders a CRD as kubectl apply -f takes it.
func CRDYAML(c apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	b, err := fileYAML(c)
	if err != nil {
		return nil, err
	}
	return append([]byte("# Generated from the Go types by internal/kubecontroller (go test ./internal/kubecontroller -run TestCRDFiles -update).\n"), b...), nil
}

// fileYAML renders a Kubernetes object as a file to apply: neither its
// status nor a creation time belong there.
func fileYAML(o any) ([]byte, error) {
	b, err := yaml.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return yaml.Marshal(m)
}

func object(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
}

func required(s apiextensionsv1.JSONSchemaProps, names ...string) apiextensionsv1.JSONSchemaProps {
	s.Required = names
	return s
}

func merge(a, b apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	for k, v := range b.Properties {
		a.Properties[k] = v
	}
	return a
}

// freeForm is any value: the API server keeps it as written.
var freeForm = apiextensionsv1.JSONSchemaProps{XPreserveUnknownFields: ptr(true)}

// literalOrRef are the environment file's types written either as a string
// or as {value|valueFrom} (a valueFrom as a string or as {environment,
// output}): the schema takes both, the parser checks them.
var literalOrRef = map[reflect.Type]bool{
	reflect.TypeFor[spec.StringValue](): true,
	reflect.TypeFor[spec.KubeValue]():   true,
	reflect.TypeFor[spec.ValueFrom]():   true,
}

var timeTypes = map[reflect.Type]bool{
	reflect.TypeFor[metav1.Time](): true,
	reflect.TypeFor[time.Time]():   true,
}

// schemaOf is the OpenAPI schema of t as encoding/json writes it.
func schemaOf(t reflect.Type) apiextensionsv1.JSONSchemaProps {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case literalOrRef[t]:
		return freeForm
	case timeTypes[t]:
		return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}
	}
	switch t.Kind() {
	case reflect.String:
		return apiextensionsv1.JSONSchemaProps{Type: "string"}
	case reflect.Bool:
		return apiextensionsv1.JSONSchemaProps{Type: "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return apiextensionsv1.JSONSchemaProps{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return apiextensionsv1.JSONSchemaProps{Type: "number"}
	case reflect.Interface:
		return freeForm
	case reflect.Slice:
		items := schemaOf(t.Elem())
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &items}}
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}
		}
		v := schemaOf(t.Elem())
		return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &v}}
	case reflect.Struct:
		s := object(map[string]apiextensionsv1.JSONSchemaProps{})
		fields(t, &s)
		return s
	}
	panic(fmt.Sprintf("kubecontroller: no schema for %s", t))
}

// fields adds t's JSON fields to s, embedded structs' inline.
func fields(t reflect.Type, s *apiextensionsv1.JSONSchemaProps) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fields(ft, s)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		s.Properties[name] = schemaOf(f.Type)
	}
}

func ptr[T any](v T) *T { return &v }
