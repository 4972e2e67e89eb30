"""`logberg report`: one self-contained HTML page of the gold tables.

`data` reads the tables (IO), `charts` draws inline SVG and `page` lays the page out (both
pure: plain data in, text out), `output` writes the file to a local path or s3a://.
"""
