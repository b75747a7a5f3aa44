package kubecontroller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// The controller owns only what it created. An environment of knit's
// store is an object's when the revision it is applied at (or, never
// applied, its newest) was written from that object's folder: the
// controller's own files, under dir/group/namespace/name. An environment
// that GitOps, the CLI or the API applied, or another object, is never
// taken over by an object naming it: the object is Stalled
// (OwnedElsewhere), nothing runs, and deleting it destroys nothing.

// owner checks that knit's environment id may be applied by object e:
// it is new, torn down, or e's own. When another object owns it, or
// something else does and e may not adopt it, the refusal says who and
// how to go on. adopted names what e takes over (for the audit trail)
// when e adopts an environment that GitOps or the CLI applied.
func (r *reconciler) owner(ctx context.Context, id string, e *Environment) (adopted string, no *refusal, err error) {
	rev, found, err := r.ownerRevision(ctx, id)
	if err != nil || !found {
		return "", nil, err
	}
	from, isObject := r.objectOf(rev)
	mine := filepath.Join(r.gv.Group, e.Namespace, e.Name)
	switch {
	case isObject && from == filepath.ToSlash(mine):
		return "", nil, nil
	case isObject:
		return "", &refusal{ReasonOwnedElsewhere, fmt.Sprintf(
			"environment %s is applied from Environment %s: give this one another teamName/envName, or delete that one first", id, from)}, nil
	case r.tenancy.mayAdopt(e.Namespace, e.Annotations):
		return provenance(rev), nil, nil
	}
	return "", &refusal{ReasonOwnedElsewhere, fmt.Sprintf(
		"environment %s is not this object's: it was applied %s, not by an Environment object, and the controller never takes over an environment it did not create (nothing ran). Give this object another teamName/envName; or, to move %s under it, a cluster admin runs knit controller with --allow-adopt %s and annotates this object %s=\"true\" (the adoption is audited)",
		id, provenance(rev), id, e.Namespace, AdoptAnnotation)}, nil
}

// owns reports whether object e created knit's environment id: the
// revision it is applied at came from e's folder. A teardown on deletion
// runs only then.
func (r *reconciler) owns(ctx context.Context, id string, e *Environment) (bool, error) {
	rev, found, err := r.ownerRevision(ctx, id)
	if err != nil || !found {
		return false, err
	}
	from, isObject := r.objectOf(rev)
	return isObject && from == filepath.ToSlash(filepath.Join(r.gv.Group, e.Namespace, e.Name)), nil
}

// ownerRevision is the revision that says who owns environment id: the
// applied one, else the newest (a first apply that failed or waits).
// found is false for an environment unknown or torn down: nobody's.
func (r *reconciler) ownerRevision(ctx context.Context, id string) (view.Revision, bool, error) {
	rec, err := knit.NewRecords(r.knit).ResolveEnv(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return view.Revision{}, false, nil
	}
	if err != nil {
		return view.Revision{}, false, err
	}
	n := rec.AppliedRevision
	if n == 0 {
		n = rec.Revision
	}
	if rec.Status == store.EnvTornDown || n == 0 {
		return view.Revision{}, false, nil
	}
	rev, err := knit.NewRecords(r.knit).Revision(ctx, rec.ID, n)
	if err != nil {
		return view.Revision{}, false, fmt.Errorf("%s revision %d: %w", rec.ID, n, err)
	}
	return rev, true, nil
}

// objectOf names the Environment object (group/namespace/name) whose
// folder revision rev was read from, if it was an object's.
func (r *reconciler) objectOf(rev view.Revision) (string, bool) {
	if !filepath.IsAbs(rev.Source) {
		return "", false // a git URL@commit:path, or not a file
	}
	rel, err := filepath.Rel(r.dir, filepath.Dir(rev.Source))
	if err != nil || !filepath.IsLocal(rel) || filepath.Base(rev.Source) != envFile {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// provenance says where revision rev came from, for a person.
func provenance(rev view.Revision) string {
	s := fmt.Sprintf("at revision %d from %s", rev.Number, rev.Source)
	if rev.Commit != "" {
		s += " (commit " + rev.Commit + ")"
	}
	return s
}
