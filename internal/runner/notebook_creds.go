package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox"
)

// credentialCat is the program of the AWS config's credential_process: it
// prints the credentials file (in the sandbox, /usr is the host's).
const credentialCat = "/bin/cat"

// processCredentials is the credentials file: the output format of an AWS
// credential_process, which moxing reads too.
type processCredentials struct {
	Version         int    `json:"Version"`
	AccessKeyID     string `json:"AccessKeyId"`
	SecretAccessKey string `json:"SecretAccessKey"`
	SessionToken    string `json:"SessionToken,omitempty"`
	// Expiration makes boto3 run the process again before it passes.
	Expiration string `json:"Expiration,omitempty"`
}

// credentialsJSON is the content of the credentials file for c.
func credentialsJSON(c api.RunnerCredentials) []byte {
	pc := processCredentials{Version: 1, AccessKeyID: c.AccessKey, SecretAccessKey: c.SecretKey, SessionToken: c.SessionToken}
	if c.Expiration > 0 {
		pc.Expiration = time.UnixMilli(c.Expiration).UTC().Format(time.RFC3339)
	}
	b, _ := json.MarshalIndent(pc, "", "  ")
	return append(b, '\n')
}

// awsConfig is the AWS config file of a notebook: the default profile
// gets its credentials by printing the credentials file (credsFile, as
// user code sees it), and its region and OBS endpoint (path-style
// addressing, as OBS answers).
func awsConfig(c api.RunnerCredentials, credsFile string) []byte {
	region := c.Region
	if region == "" {
		region = "us-east-1"
	}
	s := "# Written by Atelier at each start of the notebook; the credentials renew while it runs.\n" +
		"[default]\n" +
		"region = " + region + "\n" +
		"credential_process = " + credentialCat + " " + shellQuote(credsFile) + "\n"
	if c.S3Endpoint != "" {
		s += "endpoint_url = " + c.S3Endpoint + "\n"
	}
	s += "s3 =\n    addressing_style = path\n"
	return []byte(s)
}

// writeCredentials writes the credentials file and (config) the AWS config
// of layout l for c, each atomically, handed to user code (id): a reader
// sees the old file or the new one, never a part. c's endpoint is the one
// user code reaches (guestCredentials).
func writeCredentials(l *NotebookLayout, c api.RunnerCredentials, config bool, id sandbox.Identity) error {
	if err := writeAtomic(l.Creds, CredentialsFileName, credentialsJSON(c), id); err != nil {
		return err
	}
	if !config {
		return nil
	}
	return writeAtomic(l.Creds, AWSConfigFileName, awsConfig(c, l.View(l.CredentialsFile())), id)
}

// writeAtomic writes data to dir/name through a temporary file in dir and
// a rename, the file mode 0600 and user code's (id). dir is the runner's,
// not user code's.
func writeAtomic(dir, name string, data []byte, id sandbox.Identity) error {
	const op errs.Op = "runner.writeAtomic"
	dst := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return errs.E(op, errs.IO, CodeNotebookCredentials, because(fmt.Sprintf("cannot write in %s", dir), err), err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = id.OwnTree(tmp.Name())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return errs.E(op, errs.IO, CodeNotebookCredentials, because(fmt.Sprintf("cannot write %s", dst), err), err)
	}
	return nil
}
