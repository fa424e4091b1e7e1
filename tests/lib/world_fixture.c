/* The small hand-drawn world of tests/lib/world_fixture.h. */
#include "tests/lib/world_fixture.h"

#include <string.h>

const char wm_test_small_world_geojson[] =
    "{\"type\":\"FeatureCollection\",\"crs\":{\"type\":\"name\",\"properties\":{\"name\":\"EPSG:32632\"}},\"features\":[\n"
    "{\"type\":\"Feature\",\"id\":\"sq1\",\"properties\":{\"cats\":\"zone\"},\"geometry\":{\"type\":\"Polygon\",\"coordinates\":[[[0,0],[10,0],[10,10],[0,10],[0,0]]]}},\n"
    "{\"type\":\"Feature\",\"id\":\"sq2\",\"properties\":{\"cats\":[\"zone\"]},\"geometry\":{\"type\":\"Polygon\",\"coordinates\":[[[10,0],[20,0],[20,10],[10,10],[10,0]]]}},\n"
    "{\"type\":\"Feature\",\"id\":\"sq3\",\"properties\":{\"cats\":[\"zone\"]},\"geometry\":{\"type\":\"Polygon\",\"coordinates\":[[[5,5],[15,5],[15,15],[5,15],[5,5]]]}},\n"
    "{\"type\":\"Feature\",\"id\":\"dup\",\"properties\":{\"cats\":[\"zone\"]},\"geometry\":{\"type\":\"Polygon\",\"coordinates\":[[[10,0],[10,10],[0,10],[0,0],[10,0]]]}},\n"
    "{\"type\":\"Feature\",\"id\":\"far\",\"properties\":{\"cats\":[\"zone\"]},\"geometry\":{\"type\":\"Polygon\",\"coordinates\":[[[100,100],[110,100],[110,110],[100,110],[100,100]]]}},\n"
    "{\"type\":\"Feature\",\"id\":\"p_in\",\"properties\":{\"cats\":[\"shop/a\",\"shop/x\",\"shop/a\"]},\"geometry\":{\"type\":\"Point\",\"coordinates\":[2,2]}},\n"
    "{\"type\":\"Feature\",\"id\":\"p_edge\",\"properties\":{\"cats\":[\"shop/b\"]},\"geometry\":{\"type\":\"Point\",\"coordinates\":[10,5]}},\n"
    "{\"type\":\"Feature\",\"id\":\"l1\",\"properties\":{\"cats\":[\"road\"]},\"geometry\":{\"type\":\"LineString\",\"coordinates\":[[0,-5],[0,0]]}},\n"
    "{\"type\":\"Feature\",\"id\":\"l2\",\"properties\":{\"cats\":[\"road/minor/y\"]},\"geometry\":{\"type\":\"LineString\",\"coordinates\":[[30,0],[40,0]]}}\n"
    "]}\n";

wm_world *wm_test_small_world(wm_world_error *err)
{
    return wm_world_load_buffer(wm_test_small_world_geojson, strlen(wm_test_small_world_geojson), NULL, err);
}
