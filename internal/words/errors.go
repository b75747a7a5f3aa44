package words

// ErrorCode is an API error's machine-readable code (the error body's
// code), one per kind of failure the library reports.
type ErrorCode string

// Error codes.
const (
	CodeBadRequest      ErrorCode = "bad_request"     // the request itself is wrong (400)
	CodeUnauthenticated ErrorCode = "unauthenticated" // no valid token (401)
	CodeForbidden       ErrorCode = "forbidden"       // the token may not do it (403)
	CodeNotFound        ErrorCode = "not_found"       // nothing of that name, or switched off (404)
	CodeStalePlan       ErrorCode = "stale_plan"      // the plan approved is not the one saved (409)
	CodeLocked          ErrorCode = "locked"          // another run holds the environment (409)
	CodeConflict        ErrorCode = "conflict"        // the state does not allow it now (409)
	CodeInternal        ErrorCode = "internal"        // knit failed (500)
)

// ErrorCodes is the closed set, in the order the OpenAPI document lists it.
func ErrorCodes() []ErrorCode {
	return []ErrorCode{CodeBadRequest, CodeUnauthenticated, CodeForbidden, CodeNotFound, CodeStalePlan, CodeLocked, CodeConflict, CodeInternal}
}
