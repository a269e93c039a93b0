/* SDL2 for the Swift gallery (libsdl2-dev). */
#include <SDL2/SDL.h>
