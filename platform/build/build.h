/*
 * build/build.h: the door of platform/build/, templates built through E2B's template build API: the runner of builds and their
 * steps, in build sandboxes.
 *
 * Other wings include this header alone (tests/layout/wings.py); the headers it names are the
 * wing's contract, each with its own comment. The wing's other headers are its own.
 */
#ifndef ABX_BUILD_BUILD_H
#define ABX_BUILD_BUILD_H

#include "template_build.h"

#endif
