package spec

import (
	"strings"

	"gopkg.in/yaml.v3"
)

func (d *decoder) checkHeader(root *yaml.Node, env *Environment) {
	at := func(path string) *yaml.Node {
		if p, ok := d.pos[path]; ok {
			return &yaml.Node{Line: p.Line, Column: p.Col}
		}
		return &yaml.Node{Line: root.Line, Column: root.Column}
	}
	switch env.APIVersion {
	case APIVersionCloudKnit, APIVersionKnit:
	case "":
		d.errorf(at(""), "apiVersion", "add apiVersion: knit.dev/v1 (or stable.cloudknit.io/v1)", "missing required field")
	default:
		hint := "use knit.dev/v1 or stable.cloudknit.io/v1"
		if isCloudKnitAPI(env.APIVersion) {
			hint = "CloudKnit's current version is " + APIVersionCloudKnit + ": change apiVersion to it (or to " + APIVersionKnit + ")"
		}
		d.errorf(at("apiVersion"), "apiVersion", hint, "unsupported apiVersion %s", quote(env.APIVersion))
	}
	switch env.Kind {
	case KindEnvironment:
	case "":
		d.errorf(at(""), "kind", "add kind: Environment", "missing required field")
	case KindTemplate:
		d.errorf(at("kind"), "kind", "a template runs through an environment that uses it (spec.template: {path: ...}); knit validate -f TEMPLATE checks it on its own",
			"this is an %s, not an Environment", KindTemplate)
	case KindSet:
		d.errorf(at("kind"), "kind", "a set generates environments: knit render -f SET prints them, knit validate -f SET checks them, and the server applies them (GitOps)",
			"this is an %s, not an Environment", KindSet)
	case KindPipeline:
		d.errorf(at("kind"), "kind", "a pipeline promotes releases through its stages' environment files: knit validate -f PIPELINE checks it with its stages, and the server runs it (knit serve --pipeline FILE)",
			"this is a %s, not an Environment", KindPipeline)
	default:
		d.errorf(at("kind"), "kind", kindHint(env.Kind), "unsupported kind %s", quote(env.Kind))
	}
}

// kinds are the kinds of document knit reads, in the order docs name them.
var kinds = []string{KindEnvironment, KindTemplate, KindSet, KindPipeline}

// kindHint is the hint for a kind knit does not read: the kind it is
// closest to, if any, and every kind knit reads.
func kindHint(kind string) string {
	hint := "knit reads kind: " + strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1] + " files"
	if s := suggest(kind, kinds); s != "" {
		return s + " " + hint
	}
	return hint
}

// isCloudKnitAPI reports whether v is any of CloudKnit's API versions,
// current or old (stable.cloudknit.io/v1alpha1).
func isCloudKnitAPI(v string) bool { return strings.HasPrefix(v, "stable.cloudknit.io/") }

func (d *decoder) metadata(m *Metadata) field {
	return func(v *yaml.Node, path string) {
		d.mapping(v, path, true, map[string]field{
			"name":        d.str(&m.Name),
			"namespace":   d.str(&m.Namespace),
			"labels":      d.strMap(&m.Labels),
			"annotations": d.strMap(&m.Annotations),
		})
	}
}

func (d *decoder) envSpec(s *EnvSpec) field {
	return func(v *yaml.Node, path string) {
		d.mapping(v, path, false, map[string]field{
			"teamName":    d.str(&s.TeamName),
			"envName":     d.str(&s.EnvName),
			"description": d.str(&s.Description),
			"autoApprove": d.boolean(&s.AutoApprove),
			"teardown":    d.boolean(&s.Teardown),
			"workspace":   d.str(&s.Workspace),
			"zlocals": func(v *yaml.Node, path string) {
				d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
					var l LocalVariable
					d.mapping(item, p, false, map[string]field{
						"name": d.str(&l.Name), "value": d.str(&l.Value), "type": d.str(&l.Type),
					})
					s.ZLocals = append(s.ZLocals, l)
				})
			},
			"selectiveReconcile": func(v *yaml.Node, path string) {
				s.SelectiveReconcile = &SelectiveReconcile{}
				sr := s.SelectiveReconcile
				d.mapping(v, path, false, map[string]field{
					"tagName": d.str(&sr.TagName), "tagValues": d.strList(&sr.TagValues), "skipMode": d.boolean(&sr.SkipMode),
				})
			},
			"drift": d.drift(&s.Drift),
			"ttl":   d.str(&s.TTL),
			"approval": func(v *yaml.Node, path string) {
				s.Approval = &ApprovalPolicy{}
				d.mapping(v, path, false, map[string]field{"requireOtherApprover": d.boolean(&s.Approval.RequireOtherApprover)})
			},
			"kubeconfig": d.kubeconfig(&s.Kubeconfig),
			"template":   d.templateRef(&s.Template),
			"extends":    d.extendsRef(&s.Extends),
			"parameters": func(v *yaml.Node, path string) {
				s.Parameters, _ = d.value(v, path, 0).(map[string]any)
				n := resolve(v)
				if n != nil && n.Kind != yaml.MappingNode && n.Tag != "!!null" {
					d.mismatch(n, path, "write parameters: {NAME: VALUE, ...}", "expected a mapping, found %s", kindName(n))
				}
				for i := 0; n != nil && n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
					d.pos[join(path, n.Content[i].Value)] = d.at(n.Content[i])
				}
			},
			"overrides": d.overrides(&s.Overrides),
			"health":    d.healthPolicy(&s.Health),
			"rollout": func(v *yaml.Node, path string) {
				s.Rollout = &Rollout{}
				d.mapping(v, path, false, map[string]field{"onFailure": d.str(&s.Rollout.OnFailure), "autoApprove": d.boolean(&s.Rollout.AutoApprove),
					"strategy": d.strategy(&s.Rollout.Strategy)})
			},
			"policies": d.strList(&s.Policies),
			"exports":  d.exports(&s.Exports),
			"components": func(v *yaml.Node, path string) {
				d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
					c := &Component{}
					d.component(c)(item, p)
					s.Components = append(s.Components, c)
				})
			},
		})
	}
}

// componentHints explain unknown component fields seen in real files.
var componentHints = map[string]string{
	// CloudKnit's README shows a helm component with source: {repo, path}.
	"source": "a terraform component names its code in module: {source: ...}; a helm chart goes in chart: {path: ...} or chart: {repo: ..., name: ...} (apiVersion: knit.dev/v1)",
}

func (d *decoder) component(c *Component) field {
	return func(v *yaml.Node, path string) {
		d.mappingHints(v, path, false, d.componentFields(c), componentHints)
	}
}

// componentFields are the decoders of a component's fields, by key.
func (d *decoder) componentFields(c *Component) map[string]field {
	return map[string]field{
		"name":              d.str(&c.Name),
		"type":              d.str(&c.Type),
		"subtype":           d.str(&c.Subtype),
		"module":            d.module(&c.Module),
		"chart":             d.chart(&c.Chart),
		"manifests":         d.manifests(&c.Manifests),
		"script":            d.script(&c.Script),
		"dependsOn":         d.strList(&c.DependsOn),
		"tags":              d.tags(&c.Tags),
		"cronSchedule":      d.str(&c.CronSchedule),
		"drift":             d.drift(&c.Drift),
		"aws":               d.aws(&c.AWS),
		"autoApprove":       d.optBool(&c.AutoApprove),
		"destroy":           d.boolean(&c.Destroy),
		"destroyProtection": d.boolean(&c.DestroyProtection),
		"variablesFile":     d.variablesFile(&c.VariablesFile),
		"overlayFiles":      d.overlayFiles(&c.OverlayFiles),
		"overlayData":       d.overlayData(&c.OverlayData),
		"variables":         d.variables(&c.Variables),
		"secrets":           d.secrets(&c.Secrets),
		"outputs":           d.outputs(&c.Outputs),
		"kubeconfig":        d.kubeconfig(&c.Kubeconfig),
		"health":            d.healthChecks(&c.Health),
		"canary":            d.boolean(&c.Canary),
		"blueGreen":         d.boolean(&c.BlueGreen),
	}
}

func (d *decoder) module(dst **Module) field {
	return func(v *yaml.Node, path string) {
		m := &Module{}
		*dst = m
		d.mapping(v, path, false, map[string]field{
			"source": d.str(&m.Source), "name": d.str(&m.Name), "path": d.str(&m.Path), "version": d.str(&m.Version),
		})
	}
}

func (d *decoder) chart(dst **Chart) field {
	return func(v *yaml.Node, path string) {
		c := &Chart{}
		*dst = c
		d.mapping(v, path, false, map[string]field{
			"path": d.str(&c.Path), "git": d.str(&c.Git), "ref": d.str(&c.Ref),
			"repo": d.str(&c.Repo), "name": d.str(&c.Name), "version": d.str(&c.Version),
			"release": d.str(&c.Release), "namespace": d.str(&c.Namespace),
			"valuesFiles": d.strList(&c.ValuesFiles),
			"wait":        d.boolean(&c.Wait), "timeout": d.str(&c.Timeout),
			"test": d.boolean(&c.Test), "maxHistory": d.integer(&c.MaxHistory),
			"skipCRDs": d.boolean(&c.SkipCRDs), "dependencies": d.str(&c.Dependencies),
			"values": func(v *yaml.Node, p string) {
				if m, ok := d.value(v, p, 0).(map[string]any); ok {
					c.Values = m
				} else if resolve(v) != nil && resolve(v).Tag != "!!null" {
					d.mismatch(v, p, "", "expected a mapping of chart values, found %s", kindName(resolve(v)))
				}
			},
		})
	}
}

func (d *decoder) manifests(dst **Manifests) field {
	return func(v *yaml.Node, path string) {
		m := &Manifests{}
		*dst = m
		d.mapping(v, path, false, map[string]field{"path": d.str(&m.Path), "namespace": d.str(&m.Namespace)})
	}
}

func (d *decoder) drift(dst **DriftPolicy) field {
	return func(v *yaml.Node, path string) {
		p := &DriftPolicy{}
		*dst = p
		d.mapping(v, path, false, map[string]field{"schedule": d.str(&p.Schedule), "policy": d.str(&p.Policy)})
	}
}

func (d *decoder) kubeconfig(dst **Kubeconfig) field {
	return func(v *yaml.Node, path string) {
		k := &Kubeconfig{}
		*dst = k
		part := func(dst **KubeValue) field {
			return func(v *yaml.Node, p string) {
				kv := &KubeValue{}
				*dst = kv
				d.mapping(v, p, false, map[string]field{"value": d.str(&kv.Value), "valueFrom": d.valueFromField(&kv.ValueFrom)})
			}
		}
		d.mapping(v, path, false, map[string]field{
			"path": d.str(&k.Path), "fromEnv": d.str(&k.FromEnv), "context": d.str(&k.Context), "valueFrom": d.valueFromField(&k.ValueFrom),
			"server": part(&k.Server), "ca": part(&k.CA), "token": part(&k.Token),
		})
	}
}

func (d *decoder) script(dst **Script) field {
	return func(v *yaml.Node, path string) {
		s := &Script{}
		*dst = s
		d.mapping(v, path, false, map[string]field{"apply": d.str(&s.Apply), "destroy": d.str(&s.Destroy), "plan": d.str(&s.Plan)})
	}
}

func (d *decoder) tags(dst *[]Tag) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var t Tag
			d.mapping(item, p, false, map[string]field{"name": d.str(&t.Name), "value": d.str(&t.Value)})
			*dst = append(*dst, t)
		})
	}
}

func (d *decoder) aws(dst **AWS) field {
	return func(v *yaml.Node, path string) {
		a := &AWS{}
		*dst = a
		d.mapping(v, path, false, map[string]field{
			"region": d.str(&a.Region),
			"assumeRole": func(v *yaml.Node, p string) {
				r := &AssumeRole{}
				a.AssumeRole = r
				d.mapping(v, p, false, map[string]field{
					"roleArn": d.str(&r.RoleARN), "sessionName": d.str(&r.SessionName), "externalId": d.str(&r.ExternalID),
				})
			},
		})
	}
}

func (d *decoder) variablesFile(dst **VariablesFile) field {
	return func(v *yaml.Node, path string) {
		f := &VariablesFile{}
		*dst = f
		d.mapping(v, path, false, map[string]field{"source": d.str(&f.Source), "path": d.str(&f.Path), "ref": d.str(&f.Ref)})
	}
}

func (d *decoder) overlayFiles(dst *[]OverlayFile) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var o OverlayFile
			d.mapping(item, p, false, map[string]field{"source": d.str(&o.Source), "ref": d.str(&o.Ref), "paths": d.strList(&o.Paths)})
			*dst = append(*dst, o)
		})
	}
}

func (d *decoder) overlayData(dst *[]OverlayData) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var o OverlayData
			d.mapping(item, p, false, map[string]field{"name": d.str(&o.Name), "data": d.str(&o.Data)})
			*dst = append(*dst, o)
		})
	}
}

func (d *decoder) variables(dst *[]Variable) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var vr Variable
			d.mapping(item, p, false, map[string]field{
				"name":      d.str(&vr.Name),
				"value":     func(v *yaml.Node, vp string) { vr.Value = d.value(v, vp, 0) },
				"valueFrom": d.valueFromField(&vr.ValueFrom),
			})
			*dst = append(*dst, vr)
		})
	}
}

func (d *decoder) secrets(dst *[]Secret) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var s Secret
			d.mapping(item, p, false, map[string]field{"name": d.str(&s.Name), "scope": d.str(&s.Scope), "key": d.str(&s.Key)})
			*dst = append(*dst, s)
		})
	}
}

func (d *decoder) outputs(dst *[]Output) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var o Output
			d.mapping(item, p, false, map[string]field{"name": d.str(&o.Name), "sensitive": d.boolean(&o.Sensitive), "from": d.str(&o.From)})
			*dst = append(*dst, o)
		})
	}
}
