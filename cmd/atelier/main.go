// Command atelier is the Atelier server, runner and command-line client.
package main

import (
	"os"

	"github.com/atelier-dev/atelier/internal/cli"
)

func main() { os.Exit(cli.Main()) }
