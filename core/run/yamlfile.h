/*
 * yamlfile.h — reading one YAML document from a file, for the readers of
 * run configs (config.c) and sweeps (sweep.c), with the project's error
 * messages ("FILE: error: cannot open: ...", "FILE:LINE:COL: error: YAML
 * syntax: ...", a second document refused).
 */
#ifndef GATED_YAMLFILE_H
#define GATED_YAMLFILE_H

#include <yaml.h>

#include "run/config.h"

/* Load the one document of path into *doc (the caller deletes it with
 * yaml_document_delete).  `kind` names the file in the message for a second
 * document ("a run file").  0, or -1 with the message in err and nothing to
 * delete. */
int yaml_file_load(const char *path, const char *kind, yaml_document_t *doc, ConfigError *err);

#endif
