module logberg.test/webhook

go 1.22
