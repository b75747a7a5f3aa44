// Command stubborn stands in for tofu in the grace-period test: it answers
// `version -json`; any other command records each SIGINT in signals.log
// beside the binary and keeps running until it is killed. (A shell script
// cannot do this where SIGINT was ignored on entry: sh cannot trap it then.)
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println(`{"terraform_version":"1.12.6","platform":"linux_amd64","provider_selections":{}}`)
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	log := filepath.Join(filepath.Dir(os.Args[0]), "signals.log")
	for range ch {
		f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, "interrupted")
			f.Close()
		}
	}
}
