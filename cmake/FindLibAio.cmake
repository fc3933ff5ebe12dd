# SPDX-License-Identifier: MIT
# libaio: Debian and Fedora ship no pkg-config file for it, so fall back to header + library.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
    pkg_check_modules(PC_LIBAIO QUIET libaio)
endif()
find_path(LIBAIO_INCLUDE_DIR libaio.h HINTS ${PC_LIBAIO_INCLUDE_DIRS})
find_library(LIBAIO_LIBRARY NAMES aio HINTS ${PC_LIBAIO_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibAio REQUIRED_VARS LIBAIO_LIBRARY LIBAIO_INCLUDE_DIR)
if(LibAio_FOUND AND NOT TARGET LibAio::LibAio)
    add_library(LibAio::LibAio UNKNOWN IMPORTED)
    set_target_properties(LibAio::LibAio PROPERTIES IMPORTED_LOCATION "${LIBAIO_LIBRARY}"
                                                    INTERFACE_INCLUDE_DIRECTORIES "${LIBAIO_INCLUDE_DIR}")
endif()
