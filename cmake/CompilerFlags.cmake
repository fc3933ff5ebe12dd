# SPDX-License-Identifier: MIT
# Warnings for our own targets, and the ASan / UBSan build types.
function(ebs_hydrate_warnings target)
    target_compile_options(${target} PRIVATE
        -Wall -Wextra -Wshadow -Wformat=2 -Wundef -Wpointer-arith
        -Wstrict-prototypes -Wmissing-prototypes -Wmissing-declarations -Wvla
        -Wimplicit-fallthrough -Wno-unused-parameter -Wno-format-nonliteral)
    if(EBS_HYDRATE_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()

set(CMAKE_C_FLAGS_ASAN "-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    CACHE STRING "" FORCE)
set(CMAKE_EXE_LINKER_FLAGS_ASAN "-fsanitize=address,undefined" CACHE STRING "" FORCE)
set(CMAKE_C_FLAGS_UBSAN "-O1 -g -fsanitize=undefined -fno-sanitize-recover=all" CACHE STRING "" FORCE)
set(CMAKE_EXE_LINKER_FLAGS_UBSAN "-fsanitize=undefined" CACHE STRING "" FORCE)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
    set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()
set_property(CACHE CMAKE_BUILD_TYPE PROPERTY STRINGS Debug Release RelWithDebInfo ASan UBSan)
