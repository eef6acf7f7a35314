// Package e2e holds Atelier's black-box tests: they build the atelier
// binary, start real servers on 127.0.0.1 with free ports and temporary data
// dirs, and drive them with the CLI and third-party clients (curl with
// --aws-sigv4 now; awscli, boto3, rclone and s3cmd as OBS lands).
package e2e
