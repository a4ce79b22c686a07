/*
 * util/util.h: the door of platform/util/, the platform's shared plumbing: the serve log, clocks, files, random ids, text codecs,
 * HTTP answers and their --faults rules, TLS, the worker pool, the flavour table and the mutant
 * catalogue. Every wing may include it.
 *
 * Other wings include this header alone (tests/layout/wings.py); the headers it names are the
 * wing's contract, each with its own comment. The wing's other headers are its own.
 */
#ifndef ABX_UTIL_UTIL_H
#define ABX_UTIL_UTIL_H

#include "log.h"
#include "clock.h"
#include "fs.h"
#include "ids.h"
#include "text.h"
#include "http_answer.h"
#include "faults.h"
#include "tls.h"
#include "pool.h"
#include "flavor.h"
#include "mutant.h"

#endif
