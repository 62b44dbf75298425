// The Pet Store on gin, limited as gin's guides show: a golang.org/x/time/rate limiter per
// client address (a bucket of the free plan's 60, refilled at 60 a minute), no rate-limit
// headers. With -h2c, gin's UseH2C: a cleartext HTTP/2 upgrade offer is taken (101, then HTTP/2).
// Built offline from Debian's Go packages (GOPATH=/usr/share/gocode, GO111MODULE=off).
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

type keyList []string

func (k *keyList) String() string     { return strings.Join(*k, ",") }
func (k *keyList) Set(v string) error { *k = append(*k, v); return nil }

type category struct {
	ID          int     `json:"id"`
	Name        string  `json:"name"`
	Description *string `json:"description,omitempty"`
}

func apiError(c *gin.Context, status int, code, message string) {
	c.AbortWithStatusJSON(status, gin.H{"code": code, "message": message, "status": status})
}

// perAddress: one bucket per client address, as gin's rate-limit examples key it.
func perAddress(minute time.Duration) gin.HandlerFunc {
	var mu sync.Mutex
	limiters := map[string]*rate.Limiter{}
	return func(c *gin.Context) {
		mu.Lock()
		limiter, ok := limiters[c.ClientIP()]
		if !ok {
			limiter = rate.NewLimiter(rate.Every(minute/60), 60)
			limiters[c.ClientIP()] = limiter
		}
		mu.Unlock()
		if !limiter.Allow() {
			c.AbortWithStatusJSON(http.StatusTooManyRequests, gin.H{"error": "too many requests"})
			return
		}
		c.Next()
	}
}

func bearerAuth(keys map[string]bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		header := c.GetHeader("Authorization")
		fields := strings.Fields(header)
		if len(fields) == 2 && strings.EqualFold(fields[0], "bearer") && keys[fields[1]] {
			c.Next()
			return
		}
		challenge, message := `Bearer realm="petstore"`, "An API key is required."
		if header != "" {
			challenge, message = `Bearer realm="petstore", error="invalid_token"`, "The API key is invalid."
		}
		c.Header("WWW-Authenticate", challenge)
		apiError(c, http.StatusUnauthorized, "unauthorized", message)
	}
}

func main() {
	port := flag.Int("port", 0, "port")
	minuteSeconds := flag.Float64("minute-seconds", 60, "seconds in the limiter's minute")
	useH2C := flag.Bool("h2c", false, "take a cleartext HTTP/2 upgrade offer (gin's UseH2C)")
	var keys keyList
	flag.Var(&keys, "key", "KEY:PLAN")
	flag.Parse()
	known := map[string]bool{}
	for _, spec := range keys {
		known[strings.SplitN(spec, ":", 2)[0]] = true
	}
	gin.SetMode(gin.ReleaseMode)
	router := gin.New()
	router.UseH2C = *useH2C
	router.Use(perAddress(time.Duration(*minuteSeconds * float64(time.Second))))
	router.NoRoute(func(c *gin.Context) { apiError(c, http.StatusNotFound, "not_found", "No such resource.") })
	api := router.Group("/v1", bearerAuth(known))
	var mu sync.Mutex
	categories := []category{}
	api.GET("/categories", func(c *gin.Context) {
		mu.Lock()
		defer mu.Unlock()
		c.JSON(http.StatusOK, categories)
	})
	api.POST("/categories", func(c *gin.Context) {
		var body map[string]interface{}
		if err := c.ShouldBindJSON(&body); err != nil || body == nil {
			apiError(c, http.StatusBadRequest, "invalid_body", "The body must be a JSON object.")
			return
		}
		name, ok := body["name"].(string)
		if !ok || strings.TrimSpace(name) == "" || len([]rune(name)) > 200 {
			apiError(c, http.StatusBadRequest, "invalid_category", "name is required: a string of 1 to 200 characters.")
			return
		}
		created := category{Name: name}
		if raw, given := body["description"]; given {
			text, isText := raw.(string)
			if !isText {
				apiError(c, http.StatusBadRequest, "invalid_category", "description must be a string.")
				return
			}
			created.Description = &text
		}
		mu.Lock()
		created.ID = len(categories) + 1
		categories = append(categories, created)
		mu.Unlock()
		c.JSON(http.StatusCreated, created)
	})
	api.GET("/pets/:petId", func(c *gin.Context) {
		c.Header("Deprecation", "@1767225600")
		c.Header("Sunset", "Sat, 01 Jan 2028 00:00:00 GMT")
		if c.Param("petId") != "1" {
			apiError(c, http.StatusNotFound, "pet_not_found", "No pet has this id.")
			return
		}
		c.JSON(http.StatusOK, gin.H{"id": 1, "name": "Rex"})
	})
	api.GET("/store/orders", func(c *gin.Context) {
		c.JSON(http.StatusOK, []gin.H{{"id": 1, "petId": 1, "quantity": 1, "status": "placed"}})
	})
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		panic(err)
	}
	fmt.Printf("petstore-gin listening on http://%s/v1\n", listener.Addr())
	panic(http.Serve(listener, router.Handler()))
}
