// Package gitwatch is the git side of GitOps: it follows one branch of a
// repository and turns each new commit into the environment files it added,
// changed or removed, with a checkout of the whole tree at that commit.
//
// It runs the git binary through procexec, with an explicit environment
// (procexec.ToolEnv, never prompting) and credentials that stay out of argv
// and out of errors.
//
// Layout under Config.CacheDir:
//
//	mirror.git        a bare repository holding the watched branch, fetched on every poll
//	lock              serialises work on the cache across processes
//	trees/<commit>    the files of one commit, written once, then only read;
//	                  all but the newest Config.KeepTrees are pruned
package gitwatch
