package spec

import (
	"fmt"
	"regexp"
	"strconv"
)

var valueFromRe = regexp.MustCompile(`^([a-z]([-a-z0-9]*[a-z0-9])?)\.([A-Za-z_][A-Za-z0-9_-]*)(\[(\d+)\])?$`)

// oldValueFrom is CloudKnit's earlier valueFrom form, a Terraform expression
// reading another component's remote state.
var oldValueFrom = regexp.MustCompile(`^data\.terraform_remote_state\.([^.]+)\.outputs\.(.+)$`)

// ValueRef is a parsed valueFrom: Component.Output, or Component.Output[Index].
type ValueRef struct {
	Component string
	Output    string
	Index     *int
}

// ParseValueFrom parses "component.output" or "component.output[N]".
func ParseValueFrom(s ValueFrom) (ValueRef, bool) {
	m := valueFromRe.FindStringSubmatch(string(s))
	if m == nil {
		return ValueRef{}, false
	}
	r := ValueRef{Component: m[1], Output: m[3]}
	if m[5] != "" {
		n, err := strconv.Atoi(m[5])
		if err != nil {
			return ValueRef{}, false
		}
		r.Index = &n
	}
	return r, true
}

func (v *validator) variables(p string, c *Component) {
	seen := map[string]bool{}
	for i, vr := range c.Variables {
		vp := fmt.Sprintf("%s.variables[%d]", p, i)
		if vr.Name == "" {
			v.missing(vp, "name", "")
		} else if seen[vr.Name] {
			v.err(vp+".name", "", fmt.Sprintf("variable %q is set twice", vr.Name), "remove one of them")
		}
		seen[vr.Name] = true
		if vr.ValueFrom == "" {
			continue
		}
		if vr.Value != nil {
			v.err(vp, "", "set value or valueFrom, not both", "")
		}
		v.valueFrom(vp+".valueFrom", vr.ValueFrom, c)
	}
}

// valueFrom checks a reference to another component's output, written at
// fp; c is the component that takes it (nil at the environment's level).
// Another environment's output is checked by envValueFrom.
func (v *validator) valueFrom(fp string, value ValueFrom, c *Component) {
	if value.IsEnv() {
		v.envValueFrom(fp, value)
		return
	}
	ref, ok := ParseValueFrom(value)
	if !ok {
		hint := "e.g. valueFrom: networking.vpc_id or networking.private_subnets[0]; another environment's output: valueFrom: {environment: TEAM/ENV, output: COMPONENT.OUTPUT}"
		if m := oldValueFrom.FindStringSubmatch(string(value)); m != nil {
			hint = fmt.Sprintf("this is CloudKnit's old form; write valueFrom: %s.%s", m[1], m[2])
			if !v.known(m[1]) {
				hint += fmt.Sprintf(" (no component is named %q yet)", m[1])
			}
		}
		v.err(fp, "", fmt.Sprintf("%q is not of the form component.output or component.output[N]", value), hint)
		return
	}
	producer := v.env.Component(ref.Component)
	if base, ok := v.env.InstanceOf(ref.Component); ok {
		producer = base // a router takes the second instance's outputs
	}
	switch {
	case c != nil && (ref.Component == c.Name || producer == c):
		v.err(fp, "", fmt.Sprintf("component %q cannot take a value from itself", c.Name), "")
	case producer == nil:
		v.err(fp, "", fmt.Sprintf("component %q does not exist", ref.Component), suggest(ref.Component, v.componentList()))
	case producer.Output(ref.Output) == nil:
		v.err(fp, "", fmt.Sprintf("component %q does not declare output %q", ref.Component, ref.Output),
			hintOutputs(producer, ref.Output))
	default:
		v.moduleOutput(fp, producer, ref.Output)
	}
}

// declaredOutput is the component declaring ref's output, or nil, said at fp.
func (v *validator) declaredOutput(fp string, ref ValueRef) *Component {
	switch producer := v.env.Component(ref.Component); {
	case producer == nil:
		v.err(fp, "", fmt.Sprintf("component %q does not exist", ref.Component), suggest(ref.Component, v.componentList()))
	case producer.Output(ref.Output) == nil:
		v.err(fp, "", fmt.Sprintf("component %q does not declare output %q", ref.Component, ref.Output),
			hintOutputs(producer, ref.Output))
	default:
		return producer
	}
	return nil
}

func hintOutputs(producer *Component, name string) string {
	var names []string
	for _, o := range producer.Outputs {
		names = append(names, o.Name)
	}
	if s := suggest(name, names); s != "" {
		return s
	}
	return fmt.Sprintf("add {name: %s} to the outputs of %q", name, producer.Name)
}

func (v *validator) outputs(p string, c *Component) {
	seen := map[string]bool{}
	for i, o := range c.Outputs {
		op := fmt.Sprintf("%s.outputs[%d]", p, i)
		switch {
		case o.Name == "":
			v.missing(op, "name", "")
		case seen[o.Name]:
			v.err(op+".name", "", fmt.Sprintf("output %q is declared twice", o.Name), "")
		}
		seen[o.Name] = true
	}
}
