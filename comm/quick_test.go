package comm

import "testing"

func TestQuickRing(t *testing.T) {
	for _, tc := range transports {
		for n := 1; n <= 5; n++ {
			err := tc.run(n, func(c *Comm) error {
				buf := []float64{float64(c.Rank())}
				got := make([]float64, 1)
				st, err := Sendrecv(c, buf, (c.Rank()+1)%c.Size(), 7, got, (c.Rank()+c.Size()-1)%c.Size(), 7)
				if err != nil {
					return err
				}
				if int(got[0]) != st.Source || st.Count != 8 {
					t.Errorf("rank %d got %v %+v", c.Rank(), got, st)
				}
				sub, err := c.Split(c.Rank()%2, -c.Rank())
				if err != nil {
					return err
				}
				_ = sub
				big := make([]byte, 1<<20)
				if c.Rank() == 0 && c.Size() > 1 {
					big[5] = 9
					return Send(c, big, 1, 3)
				}
				if c.Rank() == 1 {
					_, err := Recv(c, big, 0, 3)
					if big[5] != 9 {
						t.Errorf("big")
					}
					return err
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}
