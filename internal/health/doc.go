// Package health runs health checks and judges them as Argo Rollouts'
// analysis judges a metric. A check takes measurements (an HTTP request, a
// command, a Prometheus query) Interval apart, each bounded by Timeout, and
// each measurement is Successful, Failed, Inconclusive or an Error (it
// could not be taken: a timeout, a refused connection). The check's
// verdict, decided after each measurement:
//
//   - Failed once failed measurements exceed FailureLimit;
//   - Inconclusive once inconclusive measurements exceed InconclusiveLimit;
//   - Inconclusive once errors in a row exceed ConsecutiveErrorLimit
//     (Argo's Error phase: nobody could tell, so a person decides);
//   - Successful once Count measurements other than errors were taken.
//
// Errors do not count towards Count: like Argo, knit measures again.
// Every measurement keeps its evidence (status code, query value, exit
// code) and a message for people that never holds a URL's credentials or
// the tool environment's values.
package health
