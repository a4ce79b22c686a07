/*
 * template/template.h: the door of platform/template/, what a sandbox boots from: template records and their layer chains, the overlay
 * root filesystem, the built-in templates, the store of built templates, the layer cache and
 * Debian images.
 *
 * Other wings include this header alone (tests/layout/wings.py); the headers it names are the
 * wing's contract, each with its own comment. The wing's other headers are its own.
 */
#ifndef ABX_TEMPLATE_TEMPLATE_H
#define ABX_TEMPLATE_TEMPLATE_H

#include "rootfs.h"
#include "templates.h"
#include "template_store.h"
#include "layer_cache.h"
#include "image_debian.h"

#endif
