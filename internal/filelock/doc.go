// Package filelock serialises work on a shared folder across processes with
// an advisory lock file, so that two knit processes sharing a cache do not
// fetch into, or write, the same files at once.
package filelock
